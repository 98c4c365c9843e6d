// Memory accounting: the tracking allocator's budget and its out-of-memory
// error, and the analytical model against measured bytes, exactly (single
// process here; tests/engine/zero_mpi_test.cpp covers several ranks).
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/memory/layout.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::MemCategory;

using test::quiet;

TEST(TrackingAllocator, CountsPerCategoryAndPeaks) {
  auto backend = kernels::make_cpu_backend();
  engine::TrackingAllocator alloc(*backend, 0);
  {
    const auto a = test::one_buffer(alloc, 1000, MemCategory::grads);
    const auto b = test::one_buffer(alloc, 500, MemCategory::grads);
    const auto c = test::one_buffer(alloc, 300, MemCategory::comm);
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
  const auto a = test::one_buffer(alloc, 3000, MemCategory::params);
  try {
    const auto b = test::one_buffer(alloc, 2000, MemCategory::optimizer);
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
    auto e = initialize(cfg, make_model(cfg), quiet());
    FAIL() << "expected OutOfMemoryError";
  } catch (const engine::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("over its memory budget of 64.00 KiB"), std::string::npos)
        << e.what();
  }
}

// The memory model sums the layouts the engine allocates from
// (engine/memory/layout.h), so measured bytes equal predicted bytes exactly,
// category by category. stage, dtype, overlap_comm, offloaded optimizer:
using MemoryCase = std::tuple<int, std::string, bool, bool>;
class MemoryModel : public ::testing::TestWithParam<MemoryCase> {
 protected:
  engine::Config config() const {
    const auto& [stage, dtype, overlap, offload] = GetParam();
    nlohmann::json patch = {{"zero_optimization",
                             {{"stage", stage},
                              {"overlap_comm", overlap},
                              {"reduce_bucket_size", 20000},
                              {"stage3_param_persistence_threshold", 200},
                              {"stage3_prefetch_bucket_size", 5000}}},
                            {"gradient_accumulation_steps", 2}};
    if (offload) patch["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
    if (dtype == "bf16") patch["bf16"] = {{"enabled", true}};
    if (dtype == "fp16") patch["fp16"] = {{"enabled", true}, {"initial_scale_power", 8}};
    if (dtype == "bf16-accum32") {
      patch["bf16"] = {{"enabled", true}};
      patch["data_types"] = {{"grad_accum_dtype", "fp32"}};
    }
    return test::tiny_config(patch);
  }
};

void expect_equal(const engine::CategoryBytes& measured, const engine::CategoryBytes& expected,
                  const std::string& what) {
  for (int c = 0; c < engine::kMemCategoryCount; ++c)
    EXPECT_EQ(measured[size_t(c)], expected[size_t(c)])
        << what << " " << engine::mem_category_name(MemCategory(c)) << ": measured "
        << measured[size_t(c)] << " bytes, described " << expected[size_t(c)];
}

// Peaks measured after real steps are the model's prediction, exactly.
TEST_P(MemoryModel, MatchesMeasuredPeaksPerCategory) {
  const auto cfg = config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  e->allocator().reset_peaks();
  e->host_allocator().reset_peaks();
  test::train_on_fixed_batch(*e, 3);
  const auto measured = e->allocator().stats();
  const auto predicted = engine::predict_memory(cfg, 1, e->backend());
  expect_equal(measured.peak, predicted.bytes, "device peak");
  expect_equal(e->host_allocator().stats().peak, predicted.host, "host peak");
  EXPECT_EQ(predicted.total(), measured.total_peak);
}

// Everything initialisation allocates is in a layout, and nothing else: a
// buffer allocated without its layout entry makes a category exceed the sums.
// After training steps it is again so (on-demand memory was given back).
TEST_P(MemoryModel, AllocatorHoldsExactlyTheLayouts) {
  const auto cfg = config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  const uint64_t saved =
      e->backend().attention_saved_bytes(cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu,
                                         cfg.model.seq_len, cfg.model.n_embd, cfg.model.n_head);
  const auto layouts = engine::engine_layouts(cfg, 1, saved);
  expect_equal(e->allocator().stats().current, layouts.device.resident_bytes(),
               "device after init");
  expect_equal(e->host_allocator().stats().current, layouts.host.resident_bytes(),
               "host after init");
  test::train_on_fixed_batch(*e, 2);
  expect_equal(e->allocator().stats().current, layouts.device.resident_bytes(),
               "device after steps");
  expect_equal(e->host_allocator().stats().current, layouts.host.resident_bytes(),
               "host after steps");
}

INSTANTIATE_TEST_SUITE_P(
    Stages, MemoryModel,
    ::testing::Combine(::testing::Values(0, 1, 2, 3),
                       ::testing::Values("fp32", "bf16", "fp16", "bf16-accum32"),
                       ::testing::Values(false, true), ::testing::Values(false)));
INSTANTIATE_TEST_SUITE_P(Offload, MemoryModel,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values("fp32", "bf16"),
                                            ::testing::Values(true), ::testing::Values(true)));

}  // namespace
}  // namespace hybrid
