// Candidate enumeration: stage-conditional axes, stable unique keys, the batch
// triad (fixed global batch, accumulation axis), configs the engine accepts.
#include "autotune/candidate.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using test::world;

std::vector<std::string> keys(const Enumeration& e) {
  std::vector<std::string> k;
  for (const auto& c : e.candidates) k.push_back(c.key);
  return k;
}

TEST(Candidates, AxesVaryOnlyAtTheStagesWhereTheyMatter) {
  const json base = test::tiny_config({{"autotuning", {{"metric", "latency"}}}});
  const SearchSpace space = parse_space(json::parse(R"({
    "mbs": [1, 2], "stage": [0, 3], "prefetch": [1000, 2000], "allgather_bucket_size": [10, 20]})"));
  const Enumeration e = enumerate_candidates(base, space, world(2));
  // Per micro-batch: stage 0 (prefetch and allgather do not apply) + stage 3 × 2 prefetch values.
  EXPECT_EQ(keys(e),
            (std::vector<std::string>{"mbs=1,gas=1,stage=0", "mbs=1,gas=1,stage=3,prefetch=1000",
                                      "mbs=1,gas=1,stage=3,prefetch=2000", "mbs=2,gas=1,stage=0",
                                      "mbs=2,gas=1,stage=3,prefetch=1000",
                                      "mbs=2,gas=1,stage=3,prefetch=2000"}));
  EXPECT_TRUE(e.dropped.empty());
  for (const auto& c : e.candidates) {
    EXPECT_FALSE(c.config.contains("autotuning")) << c.key;
    // The config is complete: the engine parses it to the candidate's values.
    const engine::Config parsed = engine::parse_config(c.config, 2);
    EXPECT_EQ(parsed.train_batch_size, c.micro_batch() * c.grad_accum() * 2);
    if (c.stage() == 3) {
      EXPECT_THAT(c.key,
                  HasSubstr(fmt::format("prefetch={}", parsed.zero.stage3_prefetch_bucket_size)));
    } else {
      EXPECT_EQ(parsed.zero.stage3_prefetch_bucket_size,
                engine::ZeroConfig{}.stage3_prefetch_bucket_size);
      EXPECT_EQ(parsed.zero.allgather_bucket_size, engine::ZeroConfig{}.allgather_bucket_size);
    }
  }
  // Stable: the same inputs give the same keys and configs.
  const Enumeration again = enumerate_candidates(base, space, world(2));
  ASSERT_EQ(keys(again), keys(e));
  for (size_t i = 0; i < e.candidates.size(); ++i)
    EXPECT_EQ(again.candidates[i].config, e.candidates[i].config);
  EXPECT_FALSE(e.notes.empty());  // says where prefetch and allgather vary
}

TEST(Candidates, FixedGlobalBatchDerivesAccumulation) {
  const SearchSpace space =
      parse_space(json::parse(R"({"mbs": [1, 2, 3, 4, 8], "train_batch_size": 8})"));
  const Enumeration e = enumerate_candidates(test::tiny_config(), space, world(2));
  EXPECT_EQ(keys(e), (std::vector<std::string>{"mbs=1,gas=4,stage=0", "mbs=2,gas=2,stage=0",
                                               "mbs=4,gas=1,stage=0"}));
  ASSERT_EQ(e.dropped.size(), 2u);
  EXPECT_THAT(e.dropped[0].reason,
              HasSubstr("train_batch_size 8 is not a multiple of micro-batch 3 x 2 ranks"));
  EXPECT_THAT(e.dropped[1].reason,
              HasSubstr("train_batch_size 8 is smaller than micro-batch 8 x 2 ranks"));
  for (const auto& c : e.candidates) EXPECT_EQ(c.train_batch(), 8);
}

TEST(Candidates, ABaseConfigWithTrainBatchSizeKeepsIt) {
  json base = test::tiny_config();
  base.erase("train_micro_batch_size_per_gpu");
  base.erase("gradient_accumulation_steps");
  base["train_batch_size"] = 16;
  const Enumeration e =
      enumerate_candidates(base, parse_space(json::parse(R"({"mbs": [2, 8]})")), world(2));
  EXPECT_EQ(keys(e), (std::vector<std::string>{"mbs=2,gas=4,stage=0", "mbs=8,gas=1,stage=0"}));
  EXPECT_THAT(e.notes.front(), HasSubstr("train_batch_size 16 is fixed"));
}

TEST(Candidates, AccumulationAxisSetsTheWholeTriad) {
  const SearchSpace space =
      parse_space(json::parse(R"({"mbs": [2], "gas": [1, 3], "stage": [2]})"));
  const Enumeration e = enumerate_candidates(test::tiny_config(), space, world(3));
  ASSERT_EQ(keys(e), (std::vector<std::string>{"mbs=2,gas=1,stage=2", "mbs=2,gas=3,stage=2"}));
  EXPECT_EQ(e.candidates[1].config["train_batch_size"], 18);
  EXPECT_EQ(e.candidates[1].config["gradient_accumulation_steps"], 3);
  EXPECT_EQ(e.candidates[1].parsed.zero.stage, 2);
}

TEST(Candidates, OffloadOnlyWhereTheBackendSupportsIt) {
  const SearchSpace space =
      parse_space(json::parse(R"({"stage": [1, 2], "offload_optimizer": ["none", "cpu"]})"));
  EnumerateOptions cpu;
  const Enumeration on_cpu = enumerate_candidates(test::tiny_config(), space, cpu);
  EXPECT_EQ(keys(on_cpu), (std::vector<std::string>{"mbs=1,gas=1,stage=1,offopt=none",
                                                    "mbs=1,gas=1,stage=2,offopt=none"}));
  bool noted = false;
  for (const auto& n : on_cpu.notes)
    noted = noted || n.find("offload_optimizer.device: only \"none\"") != std::string::npos;
  EXPECT_TRUE(noted);
  EnumerateOptions gpu;
  gpu.offload_supported = true;
  const Enumeration on_gpu = enumerate_candidates(test::tiny_config(), space, gpu);
  ASSERT_EQ(on_gpu.candidates.size(), 4u);
  EXPECT_EQ(on_gpu.candidates[1].parsed.zero.offload_optimizer.device, engine::OffloadDevice::cpu);
}

TEST(Candidates, MaxTrainBatchSizeDropsLargerBatches) {
  EnumerateOptions o;
  o.world_size = 2;
  o.max_train_batch_size = 4;
  const Enumeration e = enumerate_candidates(test::tiny_config(),
                                             parse_space(json::parse(R"({"mbs": [1, 2, 4]})")), o);
  EXPECT_EQ(keys(e), (std::vector<std::string>{"mbs=1,gas=1,stage=0", "mbs=2,gas=1,stage=0"}));
  ASSERT_EQ(e.dropped.size(), 1u);
  EXPECT_THAT(e.dropped[0].reason, HasSubstr("over autotuning.max_train_batch_size 4"));
}

TEST(Candidates, ValuesTheEngineRejectsAreDroppedWithItsMessage) {
  // 2^30 × 2 ranks overflows the engine's int batch size: parse_config refuses it.
  const SearchSpace space = parse_space(json::parse(R"({"mbs": [1, 1073741824], "gas": [2]})"));
  const Enumeration e = enumerate_candidates(test::tiny_config(), space, world(2));
  EXPECT_EQ(keys(e), (std::vector<std::string>{"mbs=1,gas=2,stage=0"}));
  ASSERT_EQ(e.dropped.size(), 1u);
  EXPECT_THAT(e.dropped[0].reason, HasSubstr("config: train_batch_size"));
}

TEST(Candidates, SetPathTurnsTheDeprecatedBooleanIntoAnObject) {
  json cfg = {{"zero_optimization", true}};
  set_path(cfg, "zero_optimization.overlap_comm", true);
  EXPECT_EQ(cfg["zero_optimization"], (json{{"stage", 1}, {"overlap_comm", true}}));
  set_path(cfg, "zero_optimization.offload_param.device", "cpu");
  EXPECT_EQ(cfg["zero_optimization"]["offload_param"]["device"], "cpu");
  EXPECT_EQ(without_autotuning(json{{"autotuning", 1}, {"a", 2}}), (json{{"a", 2}}));
}

}  // namespace
}  // namespace hybrid::autotune
