// Memory accounting: the tracking allocator's budget and its out-of-memory
// error, and the analytical model against measured peaks (single process here;
// tests/engine/zero_mpi_test.cpp covers several ranks).
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::MemCategory;

using test::quiet;

void run_steps(Engine& e, int steps) {
  const auto& cfg = e.config();
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t(i % size_t(cfg.model.vocab_size));
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < cfg.gradient_accumulation_steps; ++k) {
      e.forward(in, tgt);
      e.backward();
      e.step();
    }
}

TEST(TrackingAllocator, CountsPerCategoryAndPeaks) {
  auto backend = kernels::make_cpu_backend();
  engine::TrackingAllocator alloc(*backend, 0);
  {
    engine::Buffer a(alloc, 1000, MemCategory::grads);
    engine::Buffer b(alloc, 500, MemCategory::grads);
    engine::Buffer c(alloc, 300, MemCategory::comm);
    EXPECT_EQ(alloc.stats().current[size_t(MemCategory::grads)], 1500u);
    EXPECT_EQ(alloc.stats().total_current, 1800u);
  }
  const auto s = alloc.stats();
  EXPECT_EQ(s.total_current, 0u);
  EXPECT_EQ(s.peak[size_t(MemCategory::grads)], 1500u);
  EXPECT_EQ(s.peak[size_t(MemCategory::comm)], 300u);
  EXPECT_EQ(s.total_peak, 1800u);
}

TEST(TrackingAllocator, BudgetRaisesOutOfMemoryNamingTheCategory) {
  auto backend = kernels::make_cpu_backend();
  engine::TrackingAllocator alloc(*backend, 4096);
  engine::Buffer a(alloc, 3000, MemCategory::params);
  try {
    engine::Buffer b(alloc, 2000, MemCategory::optimizer);
    FAIL() << "expected OutOfMemoryError";
  } catch (const engine::OutOfMemoryError& e) {
    EXPECT_EQ(e.category(), MemCategory::optimizer);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("optimizer"), std::string::npos) << msg;
    EXPECT_NE(msg.find("budget"), std::string::npos) << msg;
  }
  // The failed allocation left nothing behind.
  EXPECT_EQ(alloc.stats().total_current, 3000u);
}

TEST(TrackingAllocator, EngineUnderBudgetFailsWithOutOfMemory) {
  auto cfg = test::tiny_config({{"hybrid", {{"memory_budget", "64KiB"}}}});
  try {
    auto e = initialize(cfg, make_gpt2(cfg), quiet());
    FAIL() << "expected OutOfMemoryError";
  } catch (const engine::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("over its memory budget of 64.00 KiB"), std::string::npos) << e.what();
  }
}

// Peaks measured after real steps match the model category by category.
class MemoryModel : public ::testing::TestWithParam<std::tuple<int, std::string, bool>> {};

TEST_P(MemoryModel, MatchesMeasuredPeaksPerCategory) {
  const auto [stage, dtype, overlap] = GetParam();
  nlohmann::json patch = {
      {"zero_optimization", {{"stage", stage}, {"overlap_comm", overlap}, {"reduce_bucket_size", 20000},
                             {"stage3_param_persistence_threshold", 200},
                             {"stage3_prefetch_bucket_size", 5000}}},
      {"gradient_accumulation_steps", 2}};
  if (dtype == "bf16") patch["bf16"] = {{"enabled", true}};
  if (dtype == "fp16") patch["fp16"] = {{"enabled", true}, {"initial_scale_power", 8}};
  if (dtype == "bf16-accum32") {
    patch["bf16"] = {{"enabled", true}};
    patch["data_types"] = {{"grad_accum_dtype", "fp32"}};
  }
  auto cfg = test::tiny_config(patch);
  auto e = initialize(cfg, make_gpt2(cfg), quiet());
  e->allocator().reset_peaks();
  run_steps(*e, 3);
  const auto measured = e->allocator().stats();
  const auto predicted = engine::predict_memory(cfg, 1, e->backend());
  for (int c = 0; c < engine::kMemCategoryCount; ++c) {
    const double m = double(measured.peak[size_t(c)]), p = double(predicted.bytes[size_t(c)]);
    EXPECT_NEAR(p, m, 0.10 * std::max(m, 1.0))
        << engine::mem_category_name(MemCategory(c)) << ": predicted " << p << ", measured " << m;
  }
  EXPECT_NEAR(double(predicted.total()), double(measured.total_peak), 0.10 * double(measured.total_peak));
}

INSTANTIATE_TEST_SUITE_P(Stages, MemoryModel,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values("fp32", "bf16", "fp16", "bf16-accum32"),
                                            ::testing::Values(false, true)));

}  // namespace
}  // namespace hybrid
