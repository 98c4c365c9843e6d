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
  return enumerate_candidates(
      test::tiny_config(), parse_space(json::parse(R"({"mbs": [1, 4, 16, 64], "stage": [0, 3]})")),
      test::world(world));
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

// Memory-saving axes: a real enumeration of micro-batch sizes × activation
// checkpointing × optimizer offload (as on a GPU, where offload is tried), with
// a budget that the biggest micro-batch meets only with checkpointing.
TEST(Pruning, MemorySavingValuesAreKeptOnlyWhereTheCandidateWouldNotFitWithout) {
  const json base = test::tiny_config(
      {{"hybrid", {{"model", {{"n_layer", 4}, {"seq_len", 64}, {"vocab_size", 64}}}}}});
  const SearchSpace space = parse_space(json::parse(
      R"({"mbs": [1, 4, 16, 64], "stage": [1, 3], "ckpt": [0, 1], "offopt": ["none", "cpu"],
          "offparam": ["none", "cpu"]})"));
  EnumerateOptions o;
  o.world_size = 2;
  o.offload_supported = true;
  const Enumeration e = enumerate_candidates(base, space, o);
  // Stage 1: 4 × 2 × 2; stage 3 adds offparam: 4 × 2 × 2 × 2.
  ASSERT_EQ(e.candidates.size(), 16u + 32u);
  const auto pred = predict_all(e.candidates, "cpu");
  auto find = [&](const std::string& key) {
    for (size_t i = 0; i < e.candidates.size(); ++i)
      if (e.candidates[i].key == key) return i;
    ADD_FAILURE() << "no candidate " << key;
    return size_t(0);
  };
  // The budget: exactly what mbs=64 needs with checkpointing and no offload at stage 1.
  const size_t fits_with_ckpt = find("mbs=64,gas=1,stage=1,offopt=none,ckpt=1");
  const size_t needs_ckpt = find("mbs=64,gas=1,stage=1,offopt=none,ckpt=0");
  const MemoryBudget budget{pred[fits_with_ckpt].total(), "test budget"};
  ASSERT_GT(pred[needs_ckpt].total(), budget.bytes) << "the premise: it needs checkpointing";

  PruneResult r = prune(e.candidates, pred, budget);
  std::vector<size_t> kept = r.kept;
  const auto dropped = drop_unneeded_memory_savers(e.candidates, kept, space, budget, "cpu");
  ASSERT_EQ(kept.size() + dropped.size(), r.kept.size());
  // Independently: the prediction of a candidate with one saver reset.
  auto without = [&](const Candidate& c, const char* path, const json& off) {
    json cfg = c.config;
    set_path(cfg, path, off);
    auto backend = kernels::make_backend("cpu", 0).backend;
    return engine::predict_memory(engine::parse_config(cfg, 2), 2, *backend).total();
  };
  struct Saver {
    const char* path;
    json off;
    int min_stage;
  };
  const Saver savers[] = {{"hybrid.activation_checkpointing.every", 0, 0},
                          {"zero_optimization.offload_optimizer.device", "none", 1},
                          {"zero_optimization.offload_param.device", "none", 3}};
  auto saves = [&](const Candidate& c, const Saver& s) {
    std::string pointer = "/" + std::string(s.path);
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const json::json_pointer at(pointer);
    return c.stage() >= s.min_stage && c.config.contains(at) && c.config.at(at) != s.off;
  };
  size_t kept_savers = 0;
  for (size_t i : kept) {
    const Candidate& c = e.candidates[i];
    EXPECT_LE(pred[i].total(), budget.bytes) << c.key;
    for (const Saver& s : savers)
      if (saves(c, s)) {
        ++kept_savers;
        EXPECT_GT(without(c, s.path, s.off), budget.bytes) << c.key << ": needs " << s.path;
      }
  }
  EXPECT_GE(kept_savers, 1u);
  EXPECT_NE(std::find(kept.begin(), kept.end(), fits_with_ckpt), kept.end());
  for (const auto& d : dropped) {
    size_t i = find(d.key);
    bool some_unneeded = false;
    for (const Saver& s : savers)
      if (saves(e.candidates[i], s))
        some_unneeded = some_unneeded || without(e.candidates[i], s.path, s.off) <= budget.bytes;
    EXPECT_TRUE(some_unneeded) << d.key;
    EXPECT_THAT(d.reason, HasSubstr("saves memory it does not need")) << d.key;
    EXPECT_THAT(d.reason, HasSubstr("test budget")) << d.key;
  }
  // Small micro-batches fit as they are: none of them keeps a saver.
  for (size_t i : kept) {
    if (e.candidates[i].micro_batch() != 1) continue;
    EXPECT_EQ(e.candidates[i].key.find("=cpu"), std::string::npos) << e.candidates[i].key;
    EXPECT_EQ(e.candidates[i].key.find("ckpt=1"), std::string::npos) << e.candidates[i].key;
  }
  const std::string reason = dropped.front().reason;
  EXPECT_THAT(reason, ::testing::MatchesRegex(".*(ckpt=1|offopt=cpu|offparam=cpu) saves memory.*"));
  // Without a budget to respect (0: unlimited), no saving is ever needed.
  std::vector<size_t> all = r.kept;
  drop_unneeded_memory_savers(e.candidates, all, space, MemoryBudget{0, "none"}, "cpu");
  for (size_t i : all) {
    EXPECT_EQ(e.candidates[i].key.find("ckpt=1"), std::string::npos) << e.candidates[i].key;
    EXPECT_EQ(e.candidates[i].key.find("=cpu"), std::string::npos) << e.candidates[i].key;
  }
}

}  // namespace
}  // namespace hybrid::autotune
