// Every engine feature on a Llama (GQA, untied, a vocabulary of 250 padded to
// 256): ZeRO 0-3 with cpu and nvme offload and activation checkpointing train
// as the plain run does; bf16 and fp16 train; the memory model equals the
// measured peaks per category; the FLOPs the profiler counts per op equal the
// closed form over CausalLM::matmul_params, for the step and for one block.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"
#include "profiler/flops.h"

namespace hybrid {
namespace {

using engine::MemCategory;

nlohmann::json llama_patch(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json p = {{"train_micro_batch_size_per_gpu", 2},
                      {"gradient_accumulation_steps", 2},
                      {"hybrid",
                       {{"model",
                         {{"type", "llama"},
                          {"n_layer", 3},
                          {"n_embd", 32},
                          {"n_head", 4},
                          {"n_kv_head", 2},
                          {"intermediate_size", 80},
                          {"vocab_size", 250},
                          {"seq_len", 16},
                          {"tie_embeddings", false}}}}}};
  if (extra.is_object()) p.merge_patch(extra);
  return p;
}

std::vector<float> run(const nlohmann::json& extra, int steps = 6) {
  const auto cfg = test::tiny_config(llama_patch(extra));
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  return test::train_on_changing_batches(*e, steps);
}

TEST(LlamaEngine, EveryZeroStageOffloadAndCheckpointingTrainsAsThePlainRun) {
  test::TempDir nvme;
  const auto plain = run(test::kAdamForComparedRuns);
  ASSERT_EQ(plain.size(), 6u);
  const std::pair<const char*, nlohmann::json> variants[] = {
      {"ZeRO-1", {{"zero_optimization", {{"stage", 1}}}}},
      {"ZeRO-2", {{"zero_optimization", {{"stage", 2}, {"reduce_bucket_size", 3000}}}}},
      {"ZeRO-3",
       {{"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 100}}}}},
      {"ZeRO-3, cpu offload",
       {{"zero_optimization",
         {{"stage", 3},
          {"offload_optimizer", {{"device", "cpu"}}},
          {"offload_param", {{"device", "cpu"}}}}}}},
      {"ZeRO-3, nvme offload",
       {{"zero_optimization",
         {{"stage", 3},
          {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", nvme.path().string()}}},
          {"offload_param", {{"device", "nvme"}, {"nvme_path", nvme.path().string()}}}}}}},
      {"activation checkpointing", {{"activation_checkpointing", nlohmann::json::object()}}},
      {"cpu checkpointing",
       {{"activation_checkpointing", {{"cpu_checkpointing", true}}},
        {"hybrid", {{"activation_checkpointing", {{"every", 2}}}}}}},
  };
  for (const auto& [what, patch] : variants) {
    auto p = test::kAdamForComparedRuns;
    p.merge_patch(patch);
    const auto got = run(p);
    ASSERT_EQ(got.size(), plain.size()) << what;
    for (size_t s = 0; s < got.size(); ++s)
      EXPECT_NEAR(got[s], plain[s], 1e-5) << what << ", step " << s + 1;
  }
}

// Losses of `steps` steps on one fixed batch (a sequence to memorise).
std::vector<float> memorise(const nlohmann::json& extra, int steps) {
  const auto cfg = test::tiny_config(llama_patch(extra));
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * size_t(cfg.seq_len());
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = int32_t(i * 7 % 250), tgt[i] = int32_t(i * 3 % 250);
  std::vector<float> losses;
  for (int s = 0; s < steps * cfg.gradient_accumulation_steps; ++s) {
    losses.push_back(e->forward(in, tgt));
    e->backward();
    e->step();
  }
  return losses;
}

// bf16 and fp16 (dynamic loss scaling): the first loss is fp32's to the
// rounding of half-precision weights and activations, and they memorise a batch
// as fp32 does.
TEST(LlamaEngine, HalfPrecisionsTrain) {
  const nlohmann::json fast = {{"optimizer", {{"params", {{"lr", 1e-2}}}}}};
  const auto plain = memorise(fast, 10);
  ASSERT_LT(plain.back(), 0.8 * plain.front()) << "fp32 learns";
  for (const char* dtype : {"bf16", "fp16"}) {
    nlohmann::json p = fast;
    p[dtype] = {{"enabled", true}};
    const auto got = memorise(p, 10);
    ASSERT_EQ(got.size(), plain.size()) << dtype;
    EXPECT_NEAR(got.front(), plain.front(), 0.02) << dtype;
    EXPECT_LT(got.back(), 0.8 * got.front()) << dtype << " learns";
    EXPECT_NEAR(got.back(), plain.back(), 0.15 * plain.back()) << dtype;
  }
}

// The memory model sums the layouts the engine allocates from, the Llama's as
// GPT-2's: measured peaks equal the prediction category by category.
TEST(LlamaEngine, MemoryModelEqualsTheMeasuredPeaksPerCategory) {
  test::TempDir nvme;
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"ZeRO-0 fp32", {{"zero_optimization", {{"stage", 0}}}}},
      {"ZeRO-1 bf16", {{"zero_optimization", {{"stage", 1}}}, {"bf16", {{"enabled", true}}}}},
      {"ZeRO-2 fp16, overlap",
       {{"zero_optimization", {{"stage", 2}, {"overlap_comm", true}, {"reduce_bucket_size", 3000}}},
        {"fp16", {{"enabled", true}, {"initial_scale_power", 8}}}}},
      {"ZeRO-3 bf16, checkpointing",
       {{"zero_optimization",
         {{"stage", 3},
          {"stage3_param_persistence_threshold", 100},
          {"stage3_prefetch_bucket_size", 3000}}},
        {"bf16", {{"enabled", true}}},
        {"activation_checkpointing", nlohmann::json::object()}}},
      {"ZeRO-3, cpu offload, cpu checkpointing",
       {{"zero_optimization",
         {{"stage", 3},
          {"offload_optimizer", {{"device", "cpu"}}},
          {"offload_param", {{"device", "cpu"}}}}},
        {"activation_checkpointing", {{"cpu_checkpointing", true}}}}},
  };
  for (const auto& [what, patch] : cases) {
    const auto cfg = test::tiny_config(llama_patch(patch));
    auto e = initialize(cfg, make_model(cfg), test::quiet());
    e->allocator().reset_peaks();
    e->host_allocator().reset_peaks();
    test::train_on_fixed_batch(*e, 3);
    const auto measured = e->allocator().stats();
    const auto predicted = engine::predict_memory(cfg, 1, e->backend());
    for (int c = 0; c < engine::kMemCategoryCount; ++c) {
      EXPECT_EQ(measured.peak[size_t(c)], predicted.bytes[size_t(c)])
          << what << ", device " << engine::mem_category_name(MemCategory(c));
      EXPECT_EQ(e->host_allocator().stats().peak[size_t(c)], predicted.host[size_t(c)])
          << what << ", host " << engine::mem_category_name(MemCategory(c));
    }
    EXPECT_EQ(predicted.total(), measured.total_peak) << what;
  }
}

// The profiler's per-op FLOPs (what ran, forward and backward) against the
// closed form 6·N + 6·L·C·T per token with N = CausalLM::matmul_params: over
// the step, and for block 1 alone (its projections' weights as N, L = 1).
TEST(LlamaEngine, PerOpFlopsEqualTheClosedForm) {
  const auto cfg = test::tiny_config(llama_patch(
      {{"gradient_accumulation_steps", 1},
       {"hybrid", {{"model", {{"n_embd", 256}, {"n_head", 4}, {"intermediate_size", 704}}}}}}));
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  const size_t n = 2 * 16;
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t(i * 13 % 250);
  e->tracer().set_enabled(true);
  e->forward(in, tgt);
  e->backward();
  e->step();
  e->tracer().set_enabled(false);
  const auto& modules = e->module_tree().modules();
  double counted = 0, block = 0;
  for (const auto& ev : e->tracer().drain()) {
    if (ev.category != profiler::Category::forward && ev.category != profiler::Category::backward)
      continue;
    counted += double(ev.flops);
    if (ev.module_id >= 0 && modules[size_t(ev.module_id)]->name().rfind("h.1.", 0) == 0)
      block += double(ev.flops);
  }
  const int64_t N = e->model().matmul_params();
  const int64_t C = 256, kv = 2 * 64, I = 704, V = 256;  // V: the padded vocabulary's columns
  EXPECT_EQ(N, 3 * (C * (C + 2 * kv) + C * C + 2 * I * C + I * C) + V * C)
      << "projections and the untied head; the embedding is a lookup";
  const double closed =
      profiler::flops::decoder_step_closed_form(double(N), 3, C, 16, double(n), true);
  const double block_closed = profiler::flops::decoder_step_closed_form(
      double(C * (C + 2 * kv) + C * C + 2 * I * C + I * C), 1, C, 16, double(n), true);
  std::printf(
      "step: counted %.4g FLOP, closed form %.4g (%+.2f %%); block 1: %.4g vs %.4g (%+.2f %%)\n",
      counted, closed, 100 * (counted - closed) / closed, block, block_closed,
      100 * (block - block_closed) / block_closed);
  EXPECT_LT(std::abs(counted - closed) / closed, 0.02);
  EXPECT_LT(std::abs(block - block_closed) / block_closed, 0.02);
}

// Tensor parallelism keeps whole key/value heads on every rank: a layout that
// cannot split them is refused naming both numbers.
TEST(LlamaEngine, TensorParallelismRefusesKvHeadsThatDoNotSplit) {
  const auto patch =
      llama_patch({{"tensor_model_parallel_size", 2}, {"hybrid", {{"model", {{"n_kv_head", 1}}}}}});
  try {
    test::tiny_config(patch, 2);
    FAIL() << "accepted 1 key/value head over 2 tensor-parallel ranks";
  } catch (const engine::ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "config: tensor_model_parallel_size 2 does not divide hybrid.model.n_kv_head "
                 "(key/value heads) 1 (each rank holds an equal share)");
  }
  EXPECT_NO_THROW(test::tiny_config(llama_patch({{"tensor_model_parallel_size", 2}}), 2));
}

}  // namespace
}  // namespace hybrid
