// What pipeline parallelism adds to the cost model (autotune/cost_model.h) for
// a config with pipeline.stages P > 1 on world / P data-parallel ranks, as the
// engine runs it (engine/runtime/pipeline_runner.cpp, 1F1B):
//
//   the busiest stage's step is (G + P − 1) micro-batch slots of its forward
//   and backward (the bubble: (P − 1) / (G + P − 1) of it idle), each slot
//   moving one [B, T, C] activation forward and its gradient back (point to
//   point, at the probe's send rate or the fitted link); the tied embedding's
//   gradient (V_padded · C) is all-reduced between first and last stage once
//   per step. ZeRO reduces the stage's own parameters over the data-parallel
//   group.
//
// With tensor_model_parallel_size tp the data-parallel group is world / (P·tp)
// and `model` is one tp rank's pieces (make_model(cfg.model, Vp, {tp, 0})): the
// stages' shares are of its FLOPs and the tied embedding is its Vp/tp rows.
#pragma once

#include "autotune/cluster_rates.h"
#include "engine/config/config.h"
#include "engine/model/causal_lm.h"

namespace hybrid::autotune {

struct PipelineCost {
  int stages = 1;
  int data_parallel = 1;     // world / (stages · tp)
  double stage_share = 1.0;  // the slowest stage's share of a micro-batch's FLOPs
  double slots = 1.0;        // micro-batch slots on the busiest stage: G + P − 1
  double p2p_s = 0;          // activations and their gradients between stages, per step
  double tied_s = 0;         // the tied embedding's all-reduce, per step
  double p2p_bytes = 0;      // per rank per step, sends and receives of the busiest stage
  double tied_bytes = 0;
};

// Forward and backward FLOPs of module m and everything under it, micro-batch [B, T].
double subtree_flops(const engine::Module& m, int B, int T);

// Without a pipeline: stages 1, share 1, slots G, nothing transferred.
// Throws std::invalid_argument when stages × tp do not divide the world.
PipelineCost pipeline_cost(const engine::Config& cfg, const engine::CausalLM& model, int world,
                           const ClusterRates& rates);

}  // namespace hybrid::autotune
