// What tensor parallelism adds to the cost model (autotune/cost_model.h) for a
// config with tensor_model_parallel_size tp > 1, as the engine runs it
// (engine/model/layers.h LinearSplit, docs/parallelism.md):
//
//   compute: a rank runs its pieces of the linear layers and the attention, cut
//   tp ways; norms, residual adds and the embedding lookup whole. compute_share
//   is the ratio of a rank's FLOPs (make_model(cfg.model, Vp, {tp, 0})) to the
//   whole model's.
//
//   communication over the tp group (neighbours on one host, so at the
//   intra-host all-reduce rate), per micro-batch on a stage: the all-reduces of
//   one [B, T, C] tensor of the param dtype that its modules declare
//   (Module::tp_all_reduces: forward, a row-parallel layer's output; backward,
//   a column-parallel layer's input gradient; the sharded embedding's output on
//   the first stage), those of the layers a checkpointed block runs again, and
//   on the last stage the all-gather of 2·B·T floats per rank for the loss;
//   per step one all-reduce of 2 floats (the norm). For GPT-2: 4 per block, 1
//   more per checkpointed block, 1 on the first stage and 1 on the last.
#pragma once

#include "autotune/cluster_rates.h"
#include "engine/config/config.h"
#include "engine/model/causal_lm.h"

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
TensorCost tensor_cost(const engine::Config& cfg, const engine::CausalLM& whole,
                       const engine::CausalLM& piece, const ClusterRates& rates);

}  // namespace hybrid::autotune
