// Pipeline layouts in the autotuner: the pipeline.stages axis (keys, the batch
// triad over world / P data-parallel ranks, drops with their reasons), the
// memory model's peak rank for a layout, and the cost model's pipeline terms
// (the bubble, the slowest stage's share, point-to-point and the tied
// embedding at the given link rates, ZeRO over the data-parallel group)
// against independent closed forms.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "autotune/best_config.h"
#include "autotune/candidate.h"
#include "autotune/cost_model.h"
#include "autotune/pipeline_cost.h"
#include "autotune/pruning.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/gpt2.h"
#include "engine/trainer.h"
#include "engine/zero/partition.h"
#include "kernels/registry.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json four_blocks(const json& patch = json::object()) {
  json p = {{"hybrid", {{"model", {{"n_layer", 4}}}}}, {"gradient_accumulation_steps", 4}};
  p.merge_patch(patch);
  return test::tiny_config(p);
}

std::map<std::string, std::string> dropped(const Enumeration& e) {
  std::map<std::string, std::string> d;
  for (const auto& x : e.dropped) d[x.key] = x.reason;
  return d;
}

TEST(PipelineLayouts, TheAxisEnumeratesLayoutsThatDivideTheWorldAndDropsTheRest) {
  const SearchSpace space =
      parse_space(json::parse(R"({"stage": [0, 2], "pipeline.stages": [1, 2, 3, 4, 8]})"));
  const Enumeration e = enumerate_candidates(four_blocks(), space, test::world(4));
  std::vector<std::string> keys;
  for (const auto& c : e.candidates) keys.push_back(c.key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"mbs=1,gas=4,stage=0,pp=1", "mbs=1,gas=4,stage=0,pp=2",
                                      "mbs=1,gas=4,stage=0,pp=4", "mbs=1,gas=4,stage=2,pp=1"}));
  const auto d = dropped(e);
  EXPECT_THAT(d.at("mbs=1,gas=4,stage=0,pp=3"), HasSubstr("pipeline.stages 3 does not divide"));
  EXPECT_THAT(d.at("mbs=1,gas=4,stage=0,pp=8"), HasSubstr("does not divide the 4 ranks"));
  EXPECT_THAT(d.at("mbs=1,gas=4,stage=2,pp=2"),
              HasSubstr("zero_optimization.stage 2 with pipeline.stages 2"));
  for (const auto& c : e.candidates) {
    const int pp = c.config.at("pipeline").at("stages").get<int>();
    EXPECT_EQ(c.parsed.parallel.pipeline_stages, pp) << c.key;
    // The batch triad counts the data-parallel ranks.
    EXPECT_EQ(c.train_batch(), c.micro_batch() * c.grad_accum() * (4 / pp)) << c.key;
    // The written best config keeps the pipeline block and its triad.
    const json best = best_config_json(c.config, 4);
    EXPECT_EQ(best.at("pipeline").at("stages"), pp) << c.key;
    EXPECT_EQ(best.at("train_batch_size"), c.train_batch()) << c.key;
  }
  // More stages than blocks cannot run.
  const Enumeration eight = enumerate_candidates(
      four_blocks(), parse_space(json::parse(R"({"pipeline.stages": [8]})")), test::world(8));
  ASSERT_EQ(eight.dropped.size(), 1u);
  EXPECT_THAT(eight.dropped[0].reason, HasSubstr("more than the model's 4 blocks"));
}

TEST(PipelineLayouts, AFixedGlobalBatchDerivesAccumulationOverTheDataParallelRanks) {
  json base = four_blocks();
  base.erase("gradient_accumulation_steps");
  base["train_batch_size"] = 8;
  const Enumeration e =
      enumerate_candidates(base, parse_space(json::parse(R"({"pp": [1, 2, 4]})")), test::world(4));
  ASSERT_EQ(e.candidates.size(), 3u);
  for (const auto& c : e.candidates) {
    EXPECT_EQ(c.train_batch(), 8) << c.key;
    EXPECT_EQ(c.grad_accum(), 8 / (4 / c.parsed.parallel.pipeline_stages)) << c.key;
  }
}

// A stage's own parameters, by an independent count: its blocks (12C² + 13C
// each), the embeddings (Vp·C + S·C) on the first stage, ln_f (2C) and the
// tied wte (Vp·C) on the last.
int64_t stage_params(const engine::Config& cfg, int stage, int stages) {
  engine::GPT2 model(cfg.model, cfg.padded_vocab());
  const auto b = model.partition_stages(stages, cfg.parallel.partition)[size_t(stage)];
  const int64_t C = cfg.model.n_embd, Vp = cfg.padded_vocab(), S = cfg.model.seq_len;
  int64_t n = int64_t(b.end - b.begin) * (12 * C * C + 13 * C);
  if (stage == 0) n += Vp * C + S * C;
  if (stage == stages - 1) n += 2 * C + (stage == 0 ? 0 : Vp * C);
  return n;
}

TEST(PipelineLayouts, TheMemoryModelPrunesByThePeakStage) {
  // A stage holds only its own parameters, ZeRO 0 over its 2 data-parallel
  // ranks: its parameter bytes are that count, padded for 2 ranks, in fp32.
  const auto pp2 = engine::parse_config(four_blocks({{"pipeline", {{"stages", 2}}}}), 4);
  const auto dp2 = engine::parse_config(four_blocks(), 2);
  const auto whole = engine::predict_memory(dp2, 2, uint64_t(0));
  uint64_t sum = 0;
  for (int s = 0; s < 2; ++s) {
    const auto m = engine::predict_stage_memory(pp2, 4, s, uint64_t(0));
    const auto padded = uint64_t(engine::Partition(stage_params(pp2, s, 2), 2, 0).padded());
    EXPECT_EQ(m[engine::MemCategory::params], padded * 4) << "stage " << s;
    EXPECT_LT(m[engine::MemCategory::params], whole[engine::MemCategory::params]) << s;
    sum += m[engine::MemCategory::params];
  }
  // Together the stages hold the model once, plus the tied wte again.
  EXPECT_GE(sum, whole[engine::MemCategory::params] + uint64_t(pp2.padded_vocab()) * 32 * 4 - 8);
  // Stage 0 holds min(P, G) activation sets of half the blocks, the last one.
  const auto s0 = engine::predict_stage_memory(pp2, 4, 0, uint64_t(0));
  const auto s1 = engine::predict_stage_memory(pp2, 4, 1, uint64_t(0));
  EXPECT_GT(s0[engine::MemCategory::activations], s1[engine::MemCategory::activations]);
  EXPECT_EQ(engine::predict_memory(pp2, 4, uint64_t(0)).total(), std::max(s0.total(), s1.total()));
}

TEST(PipelineLayouts, ALayoutWhosePeakStageIsOverTheBudgetIsPruned) {
  const Enumeration e = enumerate_candidates(
      four_blocks(), parse_space(json::parse(R"({"pp": [1, 2, 4]})")), test::world(4));
  ASSERT_EQ(e.candidates.size(), 3u);
  const auto pred = predict_all(e.candidates, "cpu");
  // The peak stage decides: stage 0 of 4 holds four activation sets.
  const auto s0 = engine::predict_stage_memory(e.candidates[2].parsed, 4, 0,
                                               *kernels::make_backend("cpu", 0).backend);
  EXPECT_EQ(pred[2].total(), s0.total());
  // A budget just below the largest layout's peak prunes only that one.
  size_t largest = 0;
  for (size_t i = 1; i < pred.size(); ++i)
    if (pred[i].total() > pred[largest].total()) largest = i;
  MemoryBudget budget;
  budget.bytes = pred[largest].total() - 1;
  budget.source = "test";
  for (size_t i = 0; i < pred.size(); ++i)
    if (i != largest) {
      ASSERT_LT(pred[i].total(), budget.bytes) << e.candidates[i].key;
    }
  const PruneResult r = prune(e.candidates, pred, budget);
  EXPECT_EQ(r.kept.size(), 2u);
  ASSERT_EQ(r.pruned.size(), 1u);
  EXPECT_EQ(r.pruned[0].key, e.candidates[largest].key);
  EXPECT_EQ(r.pruned[0].predicted_mem_bytes, pred[largest].total());
}

TEST(PipelineLayouts, TheCostModelChargesTheBubbleTransfersAndDataParallelReduction) {
  const ClusterRates r = test::linear_rates(2);  // every collective of these runs spans 2 ranks
  const auto flat = engine::parse_config(four_blocks(), 2);
  const auto pp2 = engine::parse_config(four_blocks({{"pipeline", {{"stages", 2}}}}), 4);
  const auto f_flat = step_features(flat, 2, r), f_pp = step_features(pp2, 4, r);
  engine::GPT2 model(pp2.model, pp2.padded_vocab());
  engine::ModuleTree tree(model);
  const double G = 4, P = 2;
  // Model FLOPs of the global batch (2 data-parallel ranks) are the same.
  EXPECT_DOUBLE_EQ(f_pp.flops_per_step, f_flat.flops_per_step);
  EXPECT_EQ(f_pp.samples_per_step, f_flat.samples_per_step);
  // Compute: the slowest stage's share of a micro-batch, G + P − 1 times.
  const auto pc = pipeline_cost(pp2, model, 4, r);
  EXPECT_GE(pc.stage_share, 0.5);  // the embedding and the head sit on the end stages
  EXPECT_LT(pc.stage_share, 1.0);
  const double per_micro = f_flat.x[kCompute] / G;
  EXPECT_NEAR(f_pp.x[kCompute], per_micro * pc.stage_share * (G + P - 1), 1e-15);
  // Exposed communication: the ZeRO 0 all-reduce over the 2 dp ranks of the
  // busiest stage's own parameters, one [B,T,C] each way per slot, the tied
  // embedding once.
  const double d = 4;
  const double act = 1.0 * 16 * 32 * d;
  const double tied = double(pp2.padded_vocab()) * 32 * d;
  const double flat_padded = double(engine::Partition(tree.param_count(), 2, 0).padded());
  const double padded = double(
      engine::Partition(std::max(stage_params(pp2, 0, 2), stage_params(pp2, 1, 2)), 2, 0).padded());
  EXPECT_LT(padded, flat_padded);
  EXPECT_NEAR(f_pp.x[kCommExposed], (padded * d + (G + P - 1) * 2 * act + tied) / 1e9, 1e-12);
  EXPECT_NEAR(f_pp.x[kCommExposed] - f_flat.x[kCommExposed],
              ((padded - flat_padded) * d + (G + P - 1) * 2 * act + tied) / 1e9, 1e-12);
  // The optimizer runs over the busiest stage's parameters.
  EXPECT_NEAR(f_pp.x[kOptimizer], f_flat.x[kOptimizer] * padded / flat_padded, 1e-15);
  // Without a pipeline nothing changes: stages 1 is the plain model.
  const auto pp1 = engine::parse_config(four_blocks({{"pipeline", {{"stages", 1}}}}), 2);
  EXPECT_EQ(step_features(pp1, 2, r).x, f_flat.x);
  // The bubble: more micro-batches amortise it.
  const auto pp2_g16 = engine::parse_config(
      four_blocks({{"pipeline", {{"stages", 2}}}, {"gradient_accumulation_steps", 16}}), 4);
  const double per_sample_4 = f_pp.x[kCompute] / f_pp.samples_per_step;
  const auto f16 = step_features(pp2_g16, 4, r);
  EXPECT_LT(f16.x[kCompute] / f16.samples_per_step, per_sample_4);
}

}  // namespace
}  // namespace hybrid::autotune
