// The cost model: ZeRO communication volumes per stage against independent
// formulas, compute time from FLOPs, bandwidth interpolation, and the
// constrained ridge fit against closed-form least squares.
#include "autotune/cost_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model/gpt2/gpt2.h"
#include "engine/trainer.h"
#include "engine/zero/bucket_plan.h"
#include "engine/zero/partition.h"
#include "profiler/flops.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::CollectiveKind;

// Every collective moves exactly 1 GB/s at every size: time = bytes / 1e9.
ClusterRates linear_rates(int world) {
  ClusterRates r = default_rates(kernels::BackendKind::cpu, world);
  r.bandwidth.clear();
  for (const char* op : {"all_reduce", "reduce_scatter", "all_gather"})
    for (uint64_t b : {uint64_t(1), uint64_t(1) << 30}) r.bandwidth.push_back({op, b, 1.0, 1.0});
  r.gemm_flops_per_s = 1e10;
  return r;
}

struct Sizes {
  double padded, params;
};
Sizes sizes(const engine::Config& c, int world) {
  engine::GPT2 model(c.model, c.padded_vocab());
  engine::ModuleTree tree(model);
  return {double(engine::Partition(tree.param_count(), world, 0).padded()),
          double(tree.param_count())};
}

engine::Config cfg(const json& patch, int world) {
  return engine::parse_config(test::tiny_config(patch), world);
}

TEST(CostModel, ZeroCommunicationVolumesPerStage) {
  const ClusterRates r = linear_rates(2);
  const double d = 4;  // fp32
  {
    const auto c = cfg({{"zero_optimization", {{"stage", 0}}}}, 2);
    const auto f = step_features(c, 2, r);
    EXPECT_NEAR(f.x[kCommExposed], sizes(c, 2).padded * d / 1e9, 1e-12);  // one all-reduce of Ψd
    EXPECT_EQ(f.x[kCommOverlapped], 0.0);
  }
  {
    const auto c = cfg({{"zero_optimization", {{"stage", 1}}}}, 2);
    EXPECT_NEAR(step_features(c, 2, r).x[kCommExposed], 2 * sizes(c, 2).padded * d / 1e9, 1e-12);
  }
  {  // stage 2: reduce-scatter every micro-step, all-gather once
    const auto c =
        cfg({{"gradient_accumulation_steps", 3}, {"zero_optimization", {{"stage", 2}}}}, 2);
    EXPECT_NEAR(step_features(c, 2, r).x[kCommExposed], (3 + 1) * sizes(c, 2).padded * d / 1e9,
                1e-12);
  }
  {  // stage 3 without persistent parameters: per micro-step gather Ψ twice + reduce-scatter Ψ (≈
     // 3Ψ)
    const auto c =
        cfg({{"gradient_accumulation_steps", 2},
             {"zero_optimization",
              {{"stage", 3}, {"overlap_comm", false}, {"stage3_param_persistence_threshold", 0}}}},
            2);
    const Sizes s = sizes(c, 2);
    EXPECT_NEAR(step_features(c, 2, r).x[kCommExposed], (2 * s.padded + 2 * 2 * s.params) * d / 1e9,
                1e-12);
  }
  {  // overlap_comm with one bucket for every gradient: it starts when backward ends
    const auto c = cfg({{"zero_optimization", {{"stage", 1}, {"overlap_comm", true}}}}, 2);
    const auto f = step_features(c, 2, r);
    EXPECT_EQ(f.x[kCommOverlapped], 0.0);
    EXPECT_NEAR(f.x[kCommExposed], 2 * sizes(c, 2).padded * d / 1e9, 1e-12);
  }
  {  // buckets: a 100-element bucket splits the all-reduce into ceil(Ψ/100) messages, same bytes
    const auto c = cfg({{"zero_optimization", {{"stage", 0}, {"reduce_bucket_size", 100}}}}, 2);
    EXPECT_NEAR(step_features(c, 2, r).x[kCommExposed], sizes(c, 2).padded * d / 1e9, 1e-9);
  }
  // One rank moves nothing.
  const auto f1 =
      step_features(cfg({{"zero_optimization", {{"stage", 2}}}}, 1), 1, linear_rates(1));
  EXPECT_EQ(f1.x[kCommExposed] + f1.x[kCommOverlapped], 0.0);
}

// OneBitAdam in its compressed phase: per tensor, n rounded up to 16 on 2
// ranks (2·lcm(2, 8)), n/8 bytes of signs in each of the grouped call's two
// all-to-alls and 2 fp32 scales in each of its two all-gathers; no gradient
// all-reduce.
TEST(CostModel, OneBitAdamPricesItsCompressedExchangeInsteadOfTheGradientAllReduce) {
  ClusterRates r = linear_rates(2);
  for (uint64_t b : {uint64_t(1), uint64_t(1) << 30})
    r.bandwidth.push_back({"all_to_all", b, 1.0, 1.0});
  const auto adamw = cfg(json::object(), 2);
  const auto onebit = cfg({{"optimizer", {{"type", "OneBitAdam"}}}}, 2);
  engine::GPT2 model(onebit.model, onebit.padded_vocab());
  engine::ModuleTree tree(model);
  double seconds = 0, bytes = 0;
  for (const engine::ParamSpec* p : tree.params()) {
    const double padded = std::ceil(double(p->numel) / 16.0) * 16.0;
    seconds += 2 * (padded / 8 + 8) / 1e9;
    bytes += 2 * (padded / 8 + 8);
  }
  const auto f = step_features(onebit, 2, r), g = step_features(adamw, 2, r);
  EXPECT_NEAR(f.x[kCommExposed], seconds, 1e-12);
  EXPECT_EQ(f.x[kCommOverlapped], 0.0);
  EXPECT_DOUBLE_EQ(f.comm_bytes_per_step, bytes);
  EXPECT_LT(f.comm_bytes_per_step, g.comm_bytes_per_step / 15) << "1/16 of the message bytes";
  // The compressed host step streams each parameter 92 bytes on 2 ranks
  // (optimizer_bytes_per_param) against AdamW's 32; one rank compresses nothing.
  EXPECT_NEAR(f.x[kOptimizer] / g.x[kOptimizer], 92.0 / 32.0, 1e-12);
  EXPECT_EQ(step_features(onebit, 1, r).x[kOptimizer], step_features(adamw, 1, r).x[kOptimizer]);
}

// Latency-bound, the grouped exchange costs four collectives whatever the
// number of tensors (one per tensor cost 4 × 148 on GPT-2 small): with every
// message below the probe's smallest size, each takes that size's time.
TEST(CostModel, OneBitAdamPaysTheLatencyOfFourCollectivesPerStep) {
  ClusterRates r = linear_rates(2);
  const uint64_t smallest = uint64_t(1) << 30;  // 1 GiB at 1 GB/s: 1.07 s a collective
  r.bandwidth.clear();
  for (const char* op : {"all_to_all", "all_gather"})
    r.bandwidth.push_back({op, smallest, 1.0, 1.0});
  const auto onebit = cfg({{"optimizer", {{"type", "OneBitAdam"}}}}, 2);
  engine::GPT2 model(onebit.model, onebit.padded_vocab());
  ASSERT_GT(engine::ModuleTree(model).params().size(), 4u);
  EXPECT_NEAR(step_features(onebit, 2, r).x[kCommExposed], 4 * double(smallest) / 1e9, 1e-9);
}

TEST(CostModel, ReduceScatterFalseReducesGradientsByAllReduceAtStagesOneAndTwo) {
  // All-reduce at half reduce-scatter's algorithm bandwidth, as its bus factor
  // 2(W-1)/W against (W-1)/W makes it on any link.
  ClusterRates r = linear_rates(2);
  for (auto& b : r.bandwidth)
    if (b.op == "all_reduce") b.algbw_gbps = 0.5;
  const double d = 4;
  for (int stage : {1, 2}) {
    const auto rs = cfg({{"zero_optimization", {{"stage", stage}}}}, 2);
    const auto ar = cfg({{"zero_optimization", {{"stage", stage}, {"reduce_scatter", false}}}}, 2);
    const double P = sizes(rs, 2).padded;
    // Exposed: the gradient reduction, then the all-gather of P·d at 1 GB/s.
    EXPECT_NEAR(step_features(rs, 2, r).x[kCommExposed], (P * d + P * d) / 1e9, 1e-12) << stage;
    EXPECT_NEAR(step_features(ar, 2, r).x[kCommExposed], (2 * P * d + P * d) / 1e9, 1e-12) << stage;
  }
  // Stages 0 and 3 ignore the key (DeepSpeed's too).
  for (int stage : {0, 3}) {
    const auto rs = cfg({{"zero_optimization", {{"stage", stage}}}}, 2);
    const auto ar = cfg({{"zero_optimization", {{"stage", stage}, {"reduce_scatter", false}}}}, 2);
    EXPECT_EQ(step_features(rs, 2, r).x[kCommExposed], step_features(ar, 2, r).x[kCommExposed]);
    EXPECT_EQ(step_features(rs, 2, r).x[kCommOverlapped],
              step_features(ar, 2, r).x[kCommOverlapped]);
  }
}

TEST(CostModel, ComputeIsModelFlopsPerRankOverTheGemmRate) {
  const ClusterRates r = linear_rates(2);
  const auto c =
      cfg({{"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", 2}}, 2);
  engine::GPT2 model(c.model, c.padded_vocab());
  const double flops = model_flops_per_step(c, model.matmul_params(), 2);
  const auto f = step_features(c, 2, r);
  EXPECT_DOUBLE_EQ(f.flops_per_step, flops);
  EXPECT_DOUBLE_EQ(f.x[kCompute], flops / 2 / 1e10);
  EXPECT_EQ(f.samples_per_step, 16.0);
  EXPECT_EQ(f.tokens_per_step, 16.0 * 16);
  // Accumulation doubles the per-micro-step overhead.
  const auto g1 = step_features(cfg({{"gradient_accumulation_steps", 1}}, 2), 2, r);
  const auto g2 = step_features(cfg({{"gradient_accumulation_steps", 2}}, 2), 2, r);
  EXPECT_DOUBLE_EQ(g2.x[kMicroSteps], 2 * g1.x[kMicroSteps]);
  // Counted from the modules: GPT-2's 24 backend calls per block (8 leaves each
  // way, 2 residual adds, 6 gradients zeroed) and 12 around them (embedding,
  // ln_f, lm_head and loss each way, tokens and targets in, 2 gradients zeroed).
  const auto one = cfg({{"gradient_accumulation_steps", 1}}, 2);
  EXPECT_DOUBLE_EQ(g1.x[kMicroSteps], (24.0 * one.model.n_layer + 12) * r.op_overhead_s);
}

// A Llama's figures come from its own module tree: 26 backend calls per block
// (9 leaves each way: two RMSNorms, qkv_proj, rope, core, o_proj, gate_up_proj,
// SwiGLU, down_proj; 2 residual adds; 6 gradients zeroed) and 12 around them;
// model FLOPs over its projections' weights (its untied head's included, its
// embedding's not).
TEST(CostModel, ALlamasFiguresComeFromItsModules) {
  const ClusterRates r = linear_rates(2);
  const json llama = json::parse(R"({"hybrid": {"model": {"type": "llama", "n_layer": 3,
      "n_embd": 32, "n_head": 4, "n_kv_head": 2, "intermediate_size": 64, "vocab_size": 64,
      "tie_embeddings": false}}})");
  const auto c = cfg(llama, 2);
  const auto f = step_features(c, 2, r);
  EXPECT_DOUBLE_EQ(f.x[kMicroSteps], (26.0 * 3 + 12) * r.op_overhead_s);
  const double N = 3 * (32 * (32 + 2 * 16) + 32 * 32 + 3 * 32 * 64) + 128 * 32;  // Vp 128
  EXPECT_DOUBLE_EQ(f.flops_per_step, model_flops_per_step(c, int64_t(N), 2));
}

// overlap_comm: each bucket's reduction starts once backward has filled it, so
// all but the last hide behind the rest of one micro-batch's backward (2/3 of
// its compute), as far as that lasts; the last and the excess stay exposed.
// At 1 GB/s and no latency a reduction of n bytes takes n / 1e9 s however it
// is cut, so the split is a closed form in the bucket size and backward's time.
TEST(CostModel, OverlapHidesAllButTheLastBucketAsFarAsBackwardLasts) {
  const double d = 4;
  const double bucket = 1000;         // elements
  for (double gemm : {1e10, 1e13}) {  // backward longer than the reduction, and far shorter
    ClusterRates r = linear_rates(2);
    r.gemm_flops_per_s = gemm;
    // Stage 0 all-reduces P·d once per step, stage 2 reduce-scatters it after each of
    // the 2 micro-steps and all-gathers P·d once.
    for (int stage : {0, 2}) {
      SCOPED_TRACE(::testing::Message() << "gemm " << gemm << " stage " << stage);
      const auto c = cfg(
          {{"gradient_accumulation_steps", 2},
           {"zero_optimization",
            {{"stage", stage}, {"overlap_comm", true}, {"reduce_bucket_size", int64_t(bucket)}}}},
          2);
      const auto f = step_features(c, 2, r);
      const Sizes n = sizes(c, 2);
      const double reductions = stage == 0 ? 1 : 2, once = n.padded * d / 1e9;
      // Last: the bucket backward fills last (with the partition's padding) and the
      // tied embedding's gradient, reduced once backward is done.
      engine::GPT2 model(c.model, c.padded_vocab());
      const auto buckets = engine::reduction_buckets(engine::ModuleTree(model), int64_t(bucket));
      ASSERT_GE(buckets.during_backward.size(), 3u);
      ASSERT_EQ(buckets.after_backward.size(), 1u);
      const double last =
          double(buckets.during_backward.back() + buckets.after_backward[0]) * d / 1e9 +
          (n.padded - n.params) * d / 1e9;
      const double backward = (2.0 / 3.0) * f.x[kCompute] / 2;  // one of the 2 micro-batches
      const double hidden = std::min(once - last, backward);
      EXPECT_GT(hidden, 0.0);
      EXPECT_NEAR(f.x[kCommOverlapped], reductions * hidden, 1e-12);
      EXPECT_NEAR(f.x[kCommExposed], reductions * (once - hidden) + (stage == 2 ? once : 0.0),
                  1e-12);
    }
  }
}

// Activation checkpointing adds the recomputed forwards (each checkpointed
// block's forward less mlp.c_proj and the second residual add, per
// micro-step) to compute, and at stage 3 one more all-gather of each
// non-persistent module they run; model FLOPs (what throughput counts) stay.
TEST(CostModel, CheckpointingAddsTheRecomputedForwardsAndStage3Gathers) {
  const ClusterRates r = linear_rates(2);
  const json base = {
      {"train_micro_batch_size_per_gpu", 4},
      {"gradient_accumulation_steps", 2},
      {"zero_optimization",
       {{"stage", 3}, {"overlap_comm", false}, {"stage3_param_persistence_threshold", 0}}}};
  json on = base;
  on["hybrid"] = {{"activation_checkpointing", {{"every", 1}}}};
  const auto off_c = cfg(base, 2), on_c = cfg(on, 2);
  const auto f_off = step_features(off_c, 2, r), f_on = step_features(on_c, 2, r);
  EXPECT_EQ(f_on.flops_per_step, f_off.flops_per_step);
  engine::GPT2 model(off_c.model, off_c.padded_vocab());
  engine::ModuleTree tree(model);
  const int B = 4, T = 16, L = off_c.model.n_layer;
  double block_fwd = 0;  // one block's forward FLOPs, every module of its subtree
  for (auto* m : tree.modules())
    if (m->name().rfind("h.0", 0) == 0) block_fwd += double(m->forward_flops(B, T));
  const auto* proj = model.blocks[0]->mlp_proj;
  const double recompute = block_fwd - double(proj->forward_flops(B, T)) -
                           double(profiler::flops::residual_forward(int64_t(B) * T * 32));
  EXPECT_NEAR(f_on.x[kCompute] - f_off.x[kCompute], 2.0 * L * recompute / 1e10, 1e-15);
  // Stage 3: ln_1, c_attn, attn.c_proj, ln_2 and c_fc gathered once more per block.
  double gathered = 0;
  for (const auto* m : model.blocks[0]->recompute_order())
    gathered += double(tree.own_range(*m).size());
  // ln_1 and ln_2 (weight, bias), c_attn, attn.c_proj, c_fc (weight, bias); C = 32.
  EXPECT_EQ(gathered, 4 * 32 + 32 * 96 + 96 + 32 * 32 + 32 + 32 * 128 + 128);
  EXPECT_NEAR(f_on.x[kCommExposed] - f_off.x[kCommExposed], 2.0 * L * gathered * 4 / 1e9, 1e-12);
}

TEST(CostModel, CollectiveTimesInterpolateLogLog) {
  ClusterRates r;
  r.world_size = 2;
  // 1 KiB in 10 us, 1 MiB in 1 ms: time ∝ bytes^(log(100)/log(1024)) in between.
  r.bandwidth = {{"all_gather", 1024, 1024 / 10e-6 / 1e9, 0},
                 {"all_gather", 1 << 20, (1 << 20) / 1e-3 / 1e9, 0}};
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_gather, 1024), 10e-6, 1e-12);
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_gather, 32 * 1024),
              10e-6 * std::pow(32.0, std::log(100.0) / std::log(1024.0)), 1e-10);
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_gather, 16), 10e-6, 1e-12);     // latency floor
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_gather, 4 << 20), 4e-3, 1e-9);  // bandwidth bound
  // An op the probe did not measure derives from all-reduce's bus bandwidth.
  r.bandwidth.push_back({"all_reduce", 1 << 20, 1.0, 1.0});  // busbw 1 GB/s
  EXPECT_NEAR(r.collective_s(CollectiveKind::reduce_scatter, 1 << 20), double(1 << 20) * 0.5 / 1e9,
              1e-12);
}

// A probe across hosts holds both link classes: a sweep whose ranks span hosts
// is costed with the inter-host samples only, one on a single host with the
// intra-host ones; a class the probe lacks falls back to whatever it has.
TEST(CostModel, CollectiveTimesUseTheLinkClassTheTrialsCross) {
  ClusterRates r;
  r.world_size = 2;
  r.bandwidth = {{"all_reduce", 1 << 20, 1.0, 1.0, "intra_host"},
                 {"all_reduce", 1 << 20, 0.1, 0.1, "inter_host"}};
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_reduce, 1 << 20), double(1 << 20) / 1e9, 1e-12);
  r.link = "inter_host";
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_reduce, 1 << 20), double(1 << 20) / 1e8, 1e-12);
  r.bandwidth.resize(1);  // intra-host only
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_reduce, 1 << 20), double(1 << 20) / 1e9, 1e-12);
}

TEST(CostModel, RidgeFitMatchesLeastSquaresAndStaysNonNegative) {
  // Consistent data with true weights 2, 0.5 and a tiny ridge: recovered.
  std::vector<std::array<double, kFeatureCount>> rows;
  std::vector<double> b;
  for (double u : {1.0, 2.0, 3.0, 5.0}) {
    std::array<double, kFeatureCount> x{};
    x[0] = u;
    x[1] = 1.0 / u;
    rows.push_back(x);
    b.push_back(2 * u + 0.5 / u);
  }
  Weights prior{}, tiny{};
  tiny.fill(1e-12);
  const Weights w = ridge_nonnegative(rows, b, prior, tiny);
  EXPECT_NEAR(w[0], 2.0, 1e-6);
  EXPECT_NEAR(w[1], 0.5, 1e-6);
  // Data that wants a negative second weight: it is pinned at 0 and the first is
  // the one-feature least-squares fit Σxb / Σx².
  std::vector<double> b2;
  double sxb = 0, sxx = 0;
  for (auto& x : rows) {
    b2.push_back(3 * x[0] - 4 * x[1]);
    sxb += x[0] * b2.back();
    sxx += x[0] * x[0];
  }
  const Weights w2 = ridge_nonnegative(rows, b2, prior, tiny);
  EXPECT_EQ(w2[1], 0.0);
  EXPECT_NEAR(w2[0], sxb / sxx, 1e-6);
  for (double v : w2) EXPECT_GE(v, 0.0);
}

TEST(CostModel, OneTrialRescalesThePriorAndMoreSeparateTheTerms) {
  CostModel m;
  StepFeatures a, b;
  a.x = {0.010, 0.002, 0, 0.001, 0.001};
  b.x = {0.040, 0.002, 0, 0.001, 0.001};
  EXPECT_NEAR(m.predict_s(a), 0.014, 1e-12);  // prior weights 1
  // Truth: compute weight 3, the rest 1. One trial rescales the prediction to it.
  m.observe(a, 3 * 0.010 + 0.004);
  EXPECT_NEAR(m.predict_s(a), 0.034, 0.034 * 0.01);
  // ... but cannot yet tell compute from the rest: b (4x the compute) is underestimated.
  EXPECT_LT(m.predict_s(b), 0.124 * 0.95);
  // A second trial that differs in compute only separates the terms: b is right,
  // and so is a third config with twice a's compute (never measured).
  m.observe(b, 3 * 0.040 + 0.004);
  StepFeatures c = a;
  c.x[kCompute] = 0.020;
  EXPECT_NEAR(m.predict_s(b), 0.124, 0.124 * 0.01);
  EXPECT_NEAR(m.predict_s(c), 0.064, 0.064 * 0.02);
  EXPECT_LT(m.mean_relative_error(), 0.01);
}

}  // namespace
}  // namespace hybrid::autotune
