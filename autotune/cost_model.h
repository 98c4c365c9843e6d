// The cost model of one optimizer step, used by the `model` strategy and by
// --dry-run's predicted times. A step's time is a weighted sum of physically
// meaningful features, each already in seconds from first principles:
//
//   compute         model FLOPs per rank / the probe's GEMM FLOP/s
//   comm_exposed    collective time per step (ZeRO volumes below, the probe's
//                   time for each message size) that nothing hides
//   comm_overlapped gradient reductions issued during backward with overlap_comm,
//                   as far as one micro-batch's backward (2/3 of its compute)
//                   lasts; the last bucket starts when backward ends, so it
//                   and what backward cannot hide count as exposed (one bucket
//                   that holds every gradient hides nothing)
//   micro_steps     accumulation steps × ops per micro-step × per-op overhead
//   optimizer       bytes the AdamW step streams over this rank's range / memory bandwidth
//
// ZeRO volumes per optimizer step (Ψ = parameters, d = bytes per element, G =
// accumulation steps): stage 0 all-reduce Ψd once; stage 1 reduce-scatter Ψd +
// all-gather Ψd once; stage 2 reduce-scatter Ψd every micro-step + all-gather
// Ψd once; stage 3 per micro-step all-gather of the non-persistent parameters
// in forward and in backward + reduce-scatter Ψd (≈ 3Ψ), each split into the
// configured buckets (one message per bucket or per module).
//
// The 1-bit optimizers are priced by OneBitAdam's compressed phase, the steady
// state after freeze_step: no gradient reduction, and per parameter tensor two
// all-to-alls of its packed signs and two all-gathers of one fp32 scale a
// rank, exposed (an upper bound for 0/1 Adam, which synchronises only every
// few steps; 1-bit LAMB sends the same bits as one flat buffer).
//
// With pipeline.stages P > 1 (autotune/pipeline_cost.h) ZeRO works over world / P
// ranks, compute and micro_steps count the slowest stage's share in G + P − 1
// slots (the bubble), and comm_exposed adds the point-to-point transfers and the
// tied embedding's all-reduce.
//
// With tensor_model_parallel_size tp > 1 (autotune/tensor_cost.h) a rank holds
// its pieces: ZeRO reduces those over world / (P · tp) ranks, compute counts
// the pieces' share of the FLOPs, and comm_exposed adds the tp group's
// all-reduces of [B, T, C] (4 per block and 2 more per micro-batch) and the
// loss's all-gather, at the intra-host rates, in every slot.
//
// Prior weights are 1 (0.3 for overlapped communication); after each trial the
// weights are refitted by least squares on relative errors, with a ridge
// penalty pulling them towards the prior and weights kept non-negative, so one
// trial already rescales the model and more trials separate the terms. The
// penalty of each weight is scaled by how much its feature contributes to the
// measured times (mean squared share per unit weight), so the prior counts as
// a fixed small fraction of one observation however far off its scale is.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "autotune/cluster_rates.h"
#include "engine/config/config.h"

namespace hybrid::autotune {

enum Feature : size_t {
  kCompute = 0,
  kCommExposed,
  kCommOverlapped,
  kMicroSteps,
  kOptimizer,
  kFeatureCount
};
const char* feature_name(size_t f);

struct StepFeatures {
  std::array<double, kFeatureCount> x{};  // seconds
  double samples_per_step = 0;
  double tokens_per_step = 0;
  double flops_per_step = 0;       // model FLOPs of the global batch (engine/trainer.h)
  double comm_bytes_per_step = 0;  // per rank, all collectives
};

StepFeatures step_features(const engine::Config& cfg, int world_size, const ClusterRates& rates);

using Weights = std::array<double, kFeatureCount>;
Weights prior_weights();

class CostModel {
 public:
  explicit CostModel(Weights prior = prior_weights(), double ridge = 1e-2);

  void observe(const StepFeatures& f, double step_s);  // refits
  double predict_s(const StepFeatures& f) const;
  const Weights& weights() const { return w_; }
  size_t observations() const { return ys_.size(); }
  // Mean |predicted − measured| / measured over the observations.
  double mean_relative_error() const;

 private:
  void fit();
  Weights prior_, w_;
  double ridge_;
  std::vector<std::array<double, kFeatureCount>> xs_;
  std::vector<double> ys_;
};

// Solves (AᵀA + Λ) w = Aᵀb + Λ·prior over the free (non-negative) weights, Λ
// the diagonal of `penalty`; exposed for tests. rows: A's rows; b: targets.
Weights ridge_nonnegative(const std::vector<std::array<double, kFeatureCount>>& rows,
                          const std::vector<double>& b, const Weights& prior,
                          const Weights& penalty);

}  // namespace hybrid::autotune
