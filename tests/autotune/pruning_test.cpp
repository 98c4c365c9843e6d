// Memory-model pruning: predictions are the engine's model, the budget splits
// candidates exactly, reasons name need and budget; micro-batch thinning.
#include "autotune/pruning.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/tune_error.h"
#include "kernels/registry.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

Enumeration tiny_candidates(int world) {
  EnumerateOptions o;
  o.world_size = world;
  return enumerate_candidates(
      test::tiny_config(), parse_space(json::parse(R"({"mbs": [1, 4, 16, 64], "stage": [0, 3]})")),
      o);
}

TEST(Pruning, PredictionsAreTheEnginesMemoryModel) {
  const Enumeration e = tiny_candidates(2);
  const auto pred = predict_all(e.candidates, "cpu");
  ASSERT_EQ(pred.size(), e.candidates.size());
  auto backend = kernels::make_backend("cpu", 0).backend;
  for (size_t i = 0; i < pred.size(); ++i)
    EXPECT_EQ(pred[i].total(), engine::predict_memory(e.candidates[i].parsed, 2, *backend).total())
        << e.candidates[i].key;
  // Activations grow with the micro-batch, so need does.
  EXPECT_LT(pred[0].total(), pred[2].total());
}

TEST(Pruning, TheBudgetSplitsCandidatesByPredictedNeed) {
  const Enumeration e = tiny_candidates(2);
  const auto pred = predict_all(e.candidates, "cpu");
  // A budget between the needs of two candidates.
  std::vector<uint64_t> needs;
  for (const auto& p : pred) needs.push_back(p.total());
  std::vector<uint64_t> sorted = needs;
  std::sort(sorted.begin(), sorted.end());
  MemoryBudget budget{(sorted[3] + sorted[4]) / 2, "test budget"};
  const PruneResult r = prune(e.candidates, pred, budget);
  EXPECT_EQ(r.kept.size(), 4u);
  EXPECT_EQ(r.pruned.size(), 4u);
  for (size_t i : r.kept) EXPECT_LE(needs[i], budget.bytes);
  for (const auto& p : r.pruned) {
    EXPECT_GT(p.predicted_mem_bytes, budget.bytes);
    EXPECT_EQ(p.budget_bytes, budget.bytes);
    EXPECT_THAT(p.reason, HasSubstr("> budget"));
    EXPECT_THAT(p.reason, HasSubstr("test budget"));
    EXPECT_THAT(p.reason, HasSubstr("activations"));
    EXPECT_EQ(json::parse(p.config_json)["train_micro_batch_size_per_gpu"].get<int>() >= 16, true)
        << p.key;
  }
  // No budget: nothing pruned.
  EXPECT_TRUE(prune(e.candidates, pred, MemoryBudget{0, "none"}).pruned.empty());
}

TEST(Pruning, BudgetSources) {
  engine::Config cfg;
  DeviceInfo cpu;
  cpu.memory_bytes = uint64_t(24) << 30;
  EXPECT_EQ(memory_budget(cfg, cpu, 2).bytes, uint64_t(12) << 30);
  EXPECT_THAT(memory_budget(cfg, cpu, 2).source, HasSubstr("host memory / 2"));
  DeviceInfo gpu;
  gpu.kind = kernels::BackendKind::cuda;
  gpu.name = "NVIDIA H200";
  gpu.memory_bytes = 100'000'000'000ull;
  EXPECT_EQ(memory_budget(cfg, gpu, 8).bytes, 95'000'000'000ull);
  cfg.memory_budget = 12345;
  EXPECT_EQ(memory_budget(cfg, gpu, 8).bytes, 12345u);
  EXPECT_EQ(memory_budget(cfg, gpu, 8).source, "hybrid.memory_budget");
  EXPECT_EQ(detect_device("cpu").kind, kernels::BackendKind::cpu);
  EXPECT_GT(detect_device("cpu").memory_bytes, 0u);
  for (const char* bad : {"cuda:x", "cuda:", "cudax", "cuda:-1"}) {
    try {
      detect_device(bad);
      ADD_FAILURE() << bad << ": no error";
    } catch (const TuneError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(Pruning, ThinningKeepsSpreadMicroBatchesPerGroup) {
  EnumerateOptions o;
  const Enumeration e = enumerate_candidates(
      test::tiny_config(),
      parse_space(json::parse(R"({"mbs": {"pow2": [1, 32]}, "stage": [0, 2]})")), o);
  ASSERT_EQ(e.candidates.size(), 12u);
  std::vector<size_t> kept;
  for (size_t i = 0; i < e.candidates.size(); ++i)
    if (e.candidates[i].micro_batch() <= 16) kept.push_back(i);  // as if 32 had been pruned
  const auto removed = thin_micro_batches(e.candidates, kept, 3);
  std::vector<std::string> k;
  for (size_t i : kept) k.push_back(e.candidates[i].key);
  // 1, 2, 4, 8, 16 → indices 0, 2, 4 of 5 → 1, 4, 16, for each stage.
  EXPECT_EQ(k, (std::vector<std::string>{"mbs=1,gas=1,stage=0", "mbs=1,gas=1,stage=2",
                                         "mbs=4,gas=1,stage=0", "mbs=4,gas=1,stage=2",
                                         "mbs=16,gas=1,stage=0", "mbs=16,gas=1,stage=2"}));
  EXPECT_EQ(removed.size(), 4u);
  std::vector<size_t> all = kept;
  EXPECT_TRUE(thin_micro_batches(e.candidates, all, 0).empty());  // 0: off
  EXPECT_EQ(all, kept);
}

}  // namespace
}  // namespace hybrid::autotune
