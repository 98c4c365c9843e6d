// What tensor parallelism adds to the cost model (autotune/cost_model.h) for a
// config with tensor_model_parallel_size tp > 1, as the engine runs it
// (engine/model/layers.h LinearSplit, docs/parallelism.md):
//
//   compute: a rank runs its pieces: c_attn, attn.c_proj, c_fc, mlp.c_proj,
//   lm_head and the attention cut tp ways; layernorms, residual adds and the
//   embedding lookup whole. compute_share is the ratio of a rank's FLOPs
//   (GPT2(cfg.model, Vp, {tp, 0})) to the whole model's.
//
//   communication over the tp group (neighbours on one host, so at the
//   intra-host all-reduce rate), per micro-batch on a stage with b blocks, c of
//   them checkpointed: 4b + c all-reduces of one [B, T, C] tensor of the param
//   dtype (forward: the two row-parallel outputs per block, attn.c_proj's again
//   when a checkpointed block is recomputed, which stops before mlp.c_proj;
//   backward: the two column-parallel input gradients per block), one more on
//   the first stage (the embedding) and on
//   the last (lm_head's input gradient), which also all-gathers 2·B·T floats
//   per rank for the loss; per step one all-reduce of 2 floats (the norm).
#pragma once

#include "autotune/cluster_rates.h"
#include "engine/config/config.h"
#include "engine/model/gpt2.h"

namespace hybrid::autotune {

struct TensorCost {
  int tensor = 1;
  double compute_share = 1.0;  // a rank's FLOPs of a micro-batch / the whole model's
  double all_reduces = 0;      // per micro-batch on the busiest stage
  double loss_gathers = 0;     // per micro-batch on the busiest stage (0 or 1)
  double per_micro_s = 0;      // the busiest stage's tp collectives of one micro-batch
  double per_step_s = 0;       // the norm's all-reduce
  double bytes_per_step = 0;   // per rank, the busiest stage, as the run reports them
};

// whole: the model uncut; piece: one tp rank's (equal to whole when tp is 1,
// which costs nothing). With a pipeline the busiest stage is the one with the
// most tp time, blocks partitioned as the engine does.
TensorCost tensor_cost(const engine::Config& cfg, const engine::GPT2& whole,
                       const engine::GPT2& piece, const ClusterRates& rates);

}  // namespace hybrid::autotune
