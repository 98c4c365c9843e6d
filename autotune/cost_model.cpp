#include "autotune/cost_model.h"

#include <algorithm>
#include <cmath>

#include "autotune/pipeline_cost.h"
#include "autotune/tensor_cost.h"
#include "engine/comm/compressed_all_reduce.h"
#include "engine/model/registry.h"
#include "engine/trainer.h"
#include "engine/zero/bucket_plan.h"
#include "engine/zero/partition.h"
#include "kernels/dtype.h"

namespace hybrid::autotune {

using profiler::CollectiveKind;

const char* feature_name(size_t f) {
  static const char* names[kFeatureCount] = {"compute", "comm_exposed", "comm_overlapped",
                                             "micro_steps", "optimizer"};
  return f < kFeatureCount ? names[f] : "?";
}

Weights prior_weights() { return {1.0, 1.0, 0.3, 1.0, 1.0}; }

namespace {

// Time of `total` bytes sent as messages of at most `bucket` bytes.
double bucketed_s(const ClusterRates& r, CollectiveKind kind, double total, double bucket,
                  int world) {
  if (total <= 0) return 0.0;
  bucket = std::max(1.0, std::min(bucket, total));
  const double full = std::floor(total / bucket);
  const double rest = total - full * bucket;
  return full * r.collective_s(kind, uint64_t(bucket), world) +
         (rest > 0 ? r.collective_s(kind, uint64_t(rest), world) : 0.0);
}

// A gradient reduction under overlap_comm: each bucket is reduced as soon as
// backward has filled it, so all but the last hide behind the rest of
// backward, as far as backward lasts; the last starts when backward ends. One
// bucket that holds every gradient hides nothing.
struct Overlap {
  double hidden = 0, exposed = 0;
};

Overlap overlap_reduction(double reduce_s, double last_bucket, double backward_s) {
  const double hidden = std::clamp(reduce_s - last_bucket, 0.0, backward_s);
  return {hidden, reduce_s - hidden};
}

// Activation checkpointing: what recomputing the checkpointed blocks adds per
// micro-step on one rank: FLOPs, and at stage 3 one more all-gather of each
// non-persistent module it runs.
struct Recompute {
  double flops = 0;
  double gather_s = 0;
};

Recompute recompute_cost(const engine::CausalLM& model, const engine::ModuleTree& tree,
                         const engine::Config& cfg, const ClusterRates& rates, int world) {
  const engine::CheckpointPlan plan = engine::checkpoint_plan(cfg);
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.model.seq_len;
  const double d = double(kernels::dtype_size(cfg.param_dtype()));
  Recompute r;
  for (int l = 0; l < model.num_blocks(); ++l) {
    if (!plan.checkpointed(l)) continue;
    for (const engine::Module* m : model.block(l).recompute_order()) {
      r.flops += double(m->recompute_flops(B, T));
      const double n = double(tree.own_range(*m).size());
      if (cfg.zero.stage == 3 && n > 0 && n >= double(cfg.zero.stage3_param_persistence_threshold))
        r.gather_s += rates.collective_s(CollectiveKind::all_gather, uint64_t(n * d), world);
    }
  }
  return r;
}

// The flat space ZeRO partitions on the busiest rank: its tensor-parallel
// pieces and, with a pipeline, only its stage's own parameters (the largest),
// and the buckets its gradient reducer fills (engine/zero/bucket_plan.h).
struct ZeroSpace {
  int64_t params = 0;
  engine::ReductionBuckets buckets;
};

ZeroSpace zero_space(const engine::Config& cfg, const engine::CausalLM& model) {
  const int stages = std::max(1, cfg.parallel.pipeline_stages);
  ZeroSpace most;
  for (int s = 0; s < stages; ++s) {
    const auto stage = engine::make_model(cfg.model, cfg.padded_vocab(), model.tensor_slice());
    if (stages > 1) stage->set_pipeline_stage(s, stages, cfg.parallel.partition);
    const engine::ModuleTree tree(*stage);
    if (tree.param_count() > most.params)
      most = {tree.param_count(), engine::reduction_buckets(tree, cfg.zero.reduce_bucket_size)};
  }
  return most;
}

// ZeRO's collectives over the data-parallel group of `world` ranks, P
// elements padded: gradient reductions, and the parameters' all-gathers.
// backward_s: the compute that overlap_comm hides a reduction behind (one
// micro-batch's backward); recompute_gather_s: stage 3's gathers for the
// blocks recomputed in backward.
void add_zero_comm(StepFeatures& f, const engine::Config& cfg, const engine::ModuleTree& tree,
                   const ClusterRates& rates, int world, const ZeroSpace& space, double P,
                   double recompute_gather_s, double backward_s) {
  const auto& z = cfg.zero;
  const double d = double(kernels::dtype_size(cfg.param_dtype()));
  const int G = cfg.gradient_accumulation_steps;
  const double agbs = double(z.allgather_bucket_size) * d;
  // Stage 0 all-reduces the gradients, 1-3 reduce-scatter them (1-2 all-reduce
  // with reduce_scatter false); 0-1 once per step, after the last micro-step,
  // 2-3 after every micro-step.
  auto grad_op = CollectiveKind::reduce_scatter;
  if (z.stage == 0 || (z.stage < 3 && !z.reduce_scatter)) grad_op = CollectiveKind::all_reduce;
  const double reductions = z.stage >= 2 ? G : 1;
  // One reduction: the reducer's buckets (the partition's padding with the last
  // one backward fills); that one and the shared parameters' start when
  // backward ends.
  auto during = space.buckets.during_backward;
  if (!during.empty()) during.back() += int64_t(P) - space.params;
  const auto time_of = [&](int64_t elems) {
    return rates.collective_s(grad_op, uint64_t(double(elems) * d), world);
  };
  double reduce_once = 0, tail = during.empty() ? 0.0 : time_of(during.back());
  for (int64_t b : during) reduce_once += time_of(b);
  for (int64_t b : space.buckets.after_backward) reduce_once += time_of(b), tail += time_of(b);
  double gather = 0;
  if (z.stage == 1 || z.stage == 2)
    gather = bucketed_s(rates, CollectiveKind::all_gather, P * d, agbs, world);
  if (z.stage == 3) {
    double per_pass = 0;  // one all-gather per non-persistent module, forward and backward
    for (auto* m : tree.param_modules()) {
      const double n = double(tree.own_range(*m).size());
      if (n >= double(z.stage3_param_persistence_threshold))
        per_pass += rates.collective_s(CollectiveKind::all_gather, uint64_t(n * d), world);
    }
    gather = 2.0 * G * per_pass + G * recompute_gather_s;
  }
  // With overlap_comm, gradient reductions (and stage 3's prefetched gathers)
  // run behind backward.
  if (z.overlap_comm) {
    const Overlap o = overlap_reduction(reduce_once, tail, backward_s);
    f.x[kCommOverlapped] = reductions * o.hidden + (z.stage == 3 ? gather : 0.0);
    f.x[kCommExposed] += reductions * o.exposed + (z.stage == 3 ? 0.0 : gather);
  } else {
    f.x[kCommExposed] += reductions * reduce_once + gather;
  }
  const double bytes_gather = z.stage == 0 ? 0.0 : (z.stage == 3 ? 2.0 * G : 1.0) * P * d;
  f.comm_bytes_per_step += reductions * P * d + bytes_gather;
}

// The 1-bit optimizers once compressing (the steady state after freeze_step):
// no gradient reduction; in the optimizer step, the compressed exchange of the
// momentum, every parameter tensor in one grouped call
// (engine/comm/compressed_all_reduce.h): two all-to-alls of all the packed
// signs and two all-gathers of one fp32 scale per tensor and rank, nothing to
// hide it behind.
void add_compressed_comm(StepFeatures& f, const engine::ModuleTree& tree, const ClusterRates& rates,
                         int world) {
  uint64_t signs = 0, scales = 0;
  for (const engine::ParamSpec* p : tree.params()) {
    signs += engine::comm::compressed_padded_size(size_t(p->numel), world) / 8;
    scales += p->numel ? 4 * uint64_t(world) : 0;
    f.comm_bytes_per_step +=
        double(engine::comm::compressed_all_reduce_volume(size_t(p->numel), world).message);
  }
  f.x[kCommExposed] += 2 * (rates.collective_s(CollectiveKind::all_to_all, signs, world) +
                            rates.collective_s(CollectiveKind::all_gather, scales, world));
}

// Bytes one parameter's optimizer step streams. AdamW: the gradient (a), m,
// v and the master read and written, the working copy written (d). A 1-bit
// optimizer once compressing, on its host buffers: the gradient to fp32 and
// scaled (a + 4, 8), m updated (12), the worker error added to, normed,
// packed and left with the residual (12 + 4 + 4 + 8), the averaged momentum
// unpacked (4), the update (m, v, master read, master written: 16), the
// working copy (4 + d), and the server's share (1/W of it) summed, normed,
// packed and left with its residual (16).
double optimizer_bytes_per_param(const engine::Config& cfg, int world, double a, double d) {
  if (world > 1 && cfg.optimizer.onebit())
    return (a + 4) + 8 + 12 + (12 + 4 + 4 + 8) + 4 + 16 + (4 + d) + 16.0 / world;
  return a + 4 * 3 + 4 * 3 + d;
}

}  // namespace

StepFeatures step_features(const engine::Config& cfg, int world_size, const ClusterRates& rates) {
  StepFeatures f;
  // A rank holds its tensor-parallel pieces (the whole model without tp); with
  // a pipeline only its stage's, and ZeRO works over the data-parallel group:
  // world / (stages · tp) ranks.
  const int tp = std::max(1, cfg.parallel.tensor);
  const auto whole = engine::make_model(cfg.model, cfg.padded_vocab());
  const auto model = engine::make_model(cfg.model, cfg.padded_vocab(), {tp, 0});
  engine::ModuleTree tree(*model);
  const PipelineCost pipe = pipeline_cost(cfg, *model, world_size, rates);
  const TensorCost tens = tensor_cost(cfg, *whole, *model, rates);
  const int world = pipe.data_parallel;
  const ZeroSpace space = zero_space(cfg, *model);
  const engine::Partition part(space.params, world, 0);
  const double P = double(part.padded()), S = double(part.shard_size());
  const double d = double(kernels::dtype_size(cfg.param_dtype()));
  const double a = double(kernels::dtype_size(cfg.grad_accum_dtype));

  f.samples_per_step = double(cfg.train_batch_size);
  f.tokens_per_step = double(cfg.train_batch_size) * cfg.seq_len();
  const engine::ModuleTree whole_tree(*whole);
  f.flops_per_step = model_flops_per_step(cfg, whole->matmul_params(), world);
  const Recompute rc = recompute_cost(*model, tree, cfg, rates, world);
  // The busiest stage runs its share of each micro-batch in G + P − 1 slots
  // (the bubble); without a pipeline: all of it, G times. A tp rank runs its
  // pieces' share.
  const double per_micro =
      f.flops_per_step / world / cfg.gradient_accumulation_steps * tens.compute_share + rc.flops;
  f.x[kCompute] = per_micro * pipe.stage_share * pipe.slots / rates.rank_flops_per_s();

  int ops_per_micro_step = 0;  // forward + backward backend calls, as the modules declare them
  for (const engine::Module* m : whole_tree.modules()) ops_per_micro_step += m->own_launches();
  f.x[kMicroSteps] = pipe.slots * pipe.stage_share * ops_per_micro_step * rates.op_overhead_s;

  const double n_opt = cfg.zero.stage == 0 ? P : S;
  f.x[kOptimizer] = n_opt * optimizer_bytes_per_param(cfg, world, a, d) / rates.memory_bytes_per_s;
  // tp's all-reduces sit between a micro-batch's kernels: they lengthen every slot.
  f.x[kCommExposed] = pipe.p2p_s + pipe.tied_s + pipe.slots * tens.per_micro_s + tens.per_step_s;
  f.comm_bytes_per_step = pipe.p2p_bytes + pipe.tied_bytes + tens.bytes_per_step;

  if (world > 1 && cfg.optimizer.onebit())
    add_compressed_comm(f, tree, rates, world);
  else if (world > 1)
    add_zero_comm(f, cfg, tree, rates, world, space, P, rc.gather_s,
                  (2.0 / 3.0) * per_micro * pipe.stage_share / rates.rank_flops_per_s());
  return f;
}

Weights ridge_nonnegative(const std::vector<std::array<double, kFeatureCount>>& rows,
                          const std::vector<double>& b, const Weights& prior,
                          const Weights& penalty) {
  constexpr size_t K = kFeatureCount;
  std::array<bool, K> free{};
  free.fill(true);
  Weights w = prior;
  for (size_t round = 0; round <= K; ++round) {
    // Normal equations over the free weights; fixed ones are 0.
    std::vector<size_t> idx;
    for (size_t j = 0; j < K; ++j)
      if (free[j]) idx.push_back(j);
    const size_t n = idx.size();
    std::vector<double> M(n * n, 0.0), v(n, 0.0);
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t p = 0; p < n; ++p) {
        v[p] += rows[r][idx[p]] * b[r];
        for (size_t q = 0; q < n; ++q) M[p * n + q] += rows[r][idx[p]] * rows[r][idx[q]];
      }
    for (size_t p = 0; p < n; ++p) {
      M[p * n + p] += penalty[idx[p]];
      v[p] += penalty[idx[p]] * prior[idx[p]];
    }
    // Gaussian elimination with partial pivoting (M is symmetric positive definite).
    for (size_t c = 0; c < n; ++c) {
      size_t piv = c;
      for (size_t r = c + 1; r < n; ++r)
        if (std::fabs(M[r * n + c]) > std::fabs(M[piv * n + c])) piv = r;
      if (piv != c) {
        for (size_t q = 0; q < n; ++q) std::swap(M[c * n + q], M[piv * n + q]);
        std::swap(v[c], v[piv]);
      }
      for (size_t r = c + 1; r < n; ++r) {
        const double f = M[r * n + c] / M[c * n + c];
        for (size_t q = c; q < n; ++q) M[r * n + q] -= f * M[c * n + q];
        v[r] -= f * v[c];
      }
    }
    std::vector<double> x(n, 0.0);
    for (size_t c = n; c-- > 0;) {
      double s = v[c];
      for (size_t q = c + 1; q < n; ++q) s -= M[c * n + q] * x[q];
      x[c] = s / M[c * n + c];
    }
    w.fill(0.0);
    size_t worst = K;
    for (size_t p = 0; p < n; ++p) {
      w[idx[p]] = x[p];
      if (x[p] < 0 && (worst == K || x[p] < w[worst])) worst = idx[p];
    }
    if (worst == K) return w;
    free[worst] = false;  // pin the most negative weight at 0 and solve again
    w[worst] = 0.0;
  }
  for (auto& x : w) x = std::max(0.0, x);
  return w;
}

CostModel::CostModel(Weights prior, double ridge) : prior_(prior), w_(prior), ridge_(ridge) {}

void CostModel::observe(const StepFeatures& f, double step_s) {
  if (!(step_s > 0)) return;
  xs_.push_back(f.x);
  ys_.push_back(step_s);
  fit();
}

void CostModel::fit() {
  // Relative errors: row x/y against target 1, so fast and slow configs count alike.
  std::vector<std::array<double, kFeatureCount>> rows(xs_.size());
  std::vector<double> ones(xs_.size(), 1.0);
  for (size_t i = 0; i < xs_.size(); ++i)
    for (size_t j = 0; j < kFeatureCount; ++j) rows[i][j] = xs_[i][j] / ys_[i];
  Weights penalty{};
  for (size_t j = 0; j < kFeatureCount; ++j) {
    double share = 0;  // mean squared contribution per unit weight
    for (const auto& r : rows) share += r[j] * r[j];
    share /= double(std::max<size_t>(1, rows.size()));
    // A feature absent from every observation keeps its prior weight.
    penalty[j] = ridge_ * std::max(share, 1e-12);
  }
  w_ = ridge_nonnegative(rows, ones, prior_, penalty);
}

double CostModel::predict_s(const StepFeatures& f) const {
  double t = 0;
  for (size_t j = 0; j < kFeatureCount; ++j) t += w_[j] * f.x[j];
  return std::max(t, 1e-9);
}

double CostModel::mean_relative_error() const {
  if (ys_.empty()) return 0.0;
  double s = 0;
  for (size_t i = 0; i < ys_.size(); ++i) {
    double t = 0;
    for (size_t j = 0; j < kFeatureCount; ++j) t += w_[j] * xs_[i][j];
    s += std::fabs(t - ys_[i]) / ys_[i];
  }
  return s / double(ys_.size());
}

}  // namespace hybrid::autotune
