// Tensor-parallel layouts in the autotuner: the tensor_model_parallel_size
// axis (keys, the batch triad over world / (pp · tp) data-parallel ranks,
// drops naming why), pruning by the memory model's pieces, and the cost
// model's tp terms (the pieces' compute, the tp group's all-reduces and the
// loss gather at the given rates, ZeRO over the data-parallel group of the
// pieces) against closed forms written from docs/parallelism.md.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "autotune/best_config.h"
#include "autotune/candidate.h"
#include "autotune/cost_model.h"
#include "autotune/pipeline_cost.h"
#include "autotune/pruning.h"
#include "autotune/tensor_cost.h"
#include "autotune/tune_error.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/gpt2.h"
#include "engine/zero/partition.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// n_head 2, 2 blocks, C 32, T 16, vocabulary 64 padded to 128.
json tiny(const json& patch = json::object()) { return test::tiny_config(patch); }

std::map<std::string, std::string> dropped(const Enumeration& e) {
  std::map<std::string, std::string> d;
  for (const auto& x : e.dropped) d[x.key] = x.reason;
  return d;
}

using test::world;

TEST(TensorLayouts, TheAxisHasItsShortNameAndAliases) {
  for (const char* name :
       {"tp", "tensor_model_parallel_size", "tensor_parallel_size", "tensor_model_parallel"})
    ASSERT_NE(find_axis(name), nullptr) << name;
  EXPECT_EQ(find_axis("tp")->name, "tensor_model_parallel_size");
  EXPECT_EQ(find_axis("tensor_parallel_size"), find_axis("tp"));
  EXPECT_THROW(parse_space(json::parse(R"({"tp": [0]})")), TuneError);
}

TEST(TensorLayouts, TheAxisEnumeratesLayoutsTheEngineRunsAndDropsTheRest) {
  const SearchSpace space =
      parse_space(json::parse(R"({"stage": [0, 3], "pp": [1, 2], "tp": [1, 2, 3, 4]})"));
  const Enumeration e = enumerate_candidates(tiny(), space, world(4));
  std::vector<std::string> keys;
  for (const auto& c : e.candidates) keys.push_back(c.key);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "mbs=1,gas=1,stage=0,pp=1,tp=1", "mbs=1,gas=1,stage=0,pp=1,tp=2",
                      "mbs=1,gas=1,stage=0,pp=2,tp=1", "mbs=1,gas=1,stage=0,pp=2,tp=2",
                      "mbs=1,gas=1,stage=3,pp=1,tp=1", "mbs=1,gas=1,stage=3,pp=1,tp=2"}));
  const auto d = dropped(e);
  EXPECT_THAT(d.at("mbs=1,gas=1,stage=0,pp=1,tp=3"),
              HasSubstr("tensor_model_parallel_size 3 does not divide the 4 ranks"));
  EXPECT_THAT(d.at("mbs=1,gas=1,stage=0,pp=2,tp=4"),
              HasSubstr("tensor_model_parallel_size 4 x pipeline.stages 2 does not divide"));
  EXPECT_THAT(d.at("mbs=1,gas=1,stage=0,pp=1,tp=4"),
              HasSubstr("does not divide hybrid.model.n_head 2"));
  EXPECT_THAT(d.at("mbs=1,gas=1,stage=3,pp=2,tp=2"), HasSubstr("zero_optimization.stage 3"));
  for (const auto& c : e.candidates) {
    const int pp = c.config.at("pipeline").at("stages").get<int>();
    const int tp = c.config.at("tensor_model_parallel_size").get<int>();
    EXPECT_EQ(c.parsed.parallel.tensor, tp) << c.key;
    EXPECT_EQ(c.parsed.parallel.data_parallel, 4 / (pp * tp)) << c.key;
    // The batch triad counts the data-parallel ranks.
    EXPECT_EQ(c.train_batch(), c.micro_batch() * c.grad_accum() * (4 / (pp * tp))) << c.key;
    // The written best config keeps the layout and its triad.
    const json best = best_config_json(c.config, 4);
    EXPECT_EQ(best.at("tensor_model_parallel_size"), tp) << c.key;
    EXPECT_EQ(best.at("train_batch_size"), c.train_batch()) << c.key;
  }
}

TEST(TensorLayouts, AVocabularyThatDoesNotSplitAndLambAreDroppedWithTheirReasons) {
  const SearchSpace space = parse_space(json::parse(R"({"tp": [1, 4]})"));
  // 4 heads split 4 ways, but 66 padded rows do not.
  const json odd_vocab = tiny(
      {{"hybrid", {{"model", {{"n_head", 4}, {"vocab_size", 60}, {"padded_vocab_size", 66}}}}}});
  const Enumeration v = enumerate_candidates(odd_vocab, space, world(4));
  ASSERT_EQ(v.candidates.size(), 1u);
  EXPECT_THAT(dropped(v).at("mbs=1,gas=1,stage=0,tp=4"),
              HasSubstr("does not divide the padded vocabulary 66"));
  const json lamb = tiny({{"optimizer", {{"type", "Lamb"}, {"params", {{"lr", 1e-3}}}}},
                          {"hybrid", {{"model", {{"n_head", 4}}}}}});
  const Enumeration l = enumerate_candidates(lamb, space, world(4));
  ASSERT_EQ(l.candidates.size(), 1u);
  EXPECT_EQ(l.candidates[0].parsed.parallel.tensor, 1);
  EXPECT_THAT(dropped(l).at("mbs=1,gas=1,stage=0,tp=4"), HasSubstr("optimizer Lamb"));
}

TEST(TensorLayouts, AFixedGlobalBatchDerivesAccumulationOverTheDataParallelRanks) {
  json base = tiny();
  base.erase("gradient_accumulation_steps");
  base["train_batch_size"] = 8;
  const Enumeration e = enumerate_candidates(
      base, parse_space(json::parse(R"({"tp": [1, 2], "pp": [1, 2]})")), world(4));
  ASSERT_EQ(e.candidates.size(), 4u);
  for (const auto& c : e.candidates) {
    EXPECT_EQ(c.train_batch(), 8) << c.key;
    EXPECT_EQ(c.grad_accum(), 8 / c.parsed.parallel.data_parallel) << c.key;
  }
}

TEST(TensorLayouts, TheMemoryModelPrunesTheLayoutThatHoldsWholeTensors) {
  const Enumeration e =
      enumerate_candidates(tiny({{"hybrid", {{"model", {{"n_embd", 128}}}}}}),
                           parse_space(json::parse(R"({"tp": [1, 2]})")), world(2));
  ASSERT_EQ(e.candidates.size(), 2u);
  const auto pred = predict_all(e.candidates, "cpu");
  // ZeRO 0: a tp rank holds its pieces, dp 2 ranks the whole model each.
  engine::GPT2 pieces(e.candidates[1].parsed.model, 128, {2, 0});
  const double piece = double(engine::ModuleTree(pieces).param_count());
  EXPECT_EQ(double(pred[1][engine::MemCategory::params]), piece * 4);
  ASSERT_LT(pred[1].total(), pred[0].total());
  MemoryBudget budget;
  budget.bytes = pred[0].total() - 1;
  budget.source = "test";
  const PruneResult r = prune(e.candidates, pred, budget);
  EXPECT_EQ(r.kept, (std::vector<size_t>{1}));
  ASSERT_EQ(r.pruned.size(), 1u);
  EXPECT_EQ(r.pruned[0].key, e.candidates[0].key);
}

// Forward and backward FLOPs of the whole model's modules, those
// docs/parallelism.md cuts tp ways divided by tp, the rest whole (the
// row-parallel c_proj layers add their bias, B·T·C each way, after the
// all-reduce on every rank): independent of how the model is cut.
double rank_flops(const engine::Module& m, int B, int T, int C, int tp) {
  static const std::set<std::string> cut = {"attn.c_attn", "attn.core",  "attn.c_proj", "mlp.c_fc",
                                            "mlp.gelu",    "mlp.c_proj", "lm_head"};
  double f = double(m.forward_flops(B, T)) + double(m.backward_flops(B, T));
  const double bias = m.name().ends_with("c_proj") ? 2.0 * B * T * C : 0.0;
  for (const auto& suffix : cut)
    if (m.name().ends_with(suffix)) f = (f - bias) / tp + bias;
  for (const engine::Module* c : m.children()) f += rank_flops(*c, B, T, C, tp);
  return f;
}

TEST(TensorLayouts, TheCostModelChargesThePiecesTheTpCollectivesAndDataParallelReduction) {
  const ClusterRates r = test::linear_rates(2);  // every collective of these runs spans 2 ranks
  const json patch = {{"gradient_accumulation_steps", 4}, {"zero_optimization", {{"stage", 1}}}};
  const auto flat = engine::parse_config(tiny(patch), 2);  // dp 2
  json tp_patch = patch;
  tp_patch["tensor_model_parallel_size"] = 2;
  const auto tp2 = engine::parse_config(tiny(tp_patch), 4);  // tp 2 × dp 2
  const auto f_flat = step_features(flat, 2, r), f_tp = step_features(tp2, 4, r);
  engine::GPT2 whole(tp2.model, 128), piece(tp2.model, 128, {2, 0});
  const double G = 4, L = 2, B = 1, T = 16, C = 32, d = 4;
  // The global batch and its model FLOPs are the same.
  EXPECT_EQ(f_tp.samples_per_step, f_flat.samples_per_step);
  EXPECT_DOUBLE_EQ(f_tp.flops_per_step, f_flat.flops_per_step);
  // Compute: the rank's share of every micro-batch.
  const double share = rank_flops(whole, 1, 16, 32, 2) / rank_flops(whole, 1, 16, 32, 1);
  EXPECT_GT(share, 0.5);  // layernorms, residuals and the embedding stay whole
  EXPECT_LT(share, 0.75);
  EXPECT_NEAR(tensor_cost(tp2, whole, piece, r).compute_share, share, 1e-12);
  EXPECT_NEAR(f_tp.x[kCompute], f_flat.x[kCompute] * share, 1e-12 * f_flat.x[kCompute]);
  // tp: (4L + 2) all-reduces of [B, T, C] and a gather of 2·B·T floats from
  // each of the 2 ranks per micro-batch, the norm's 2 floats per step.
  const double act = B * T * C * d, gathered = 2 * 2 * B * T * 4;
  const double tp_bytes = G * ((4 * L + 2) * act + gathered) + 8;
  // ZeRO 1 over dp 2: reduce-scatter and all-gather of the rank's pieces.
  const engine::Partition part(engine::ModuleTree(piece).param_count(), 2, 0);
  const double zero_bytes = 2 * double(part.padded()) * d;
  EXPECT_DOUBLE_EQ(f_tp.comm_bytes_per_step, tp_bytes + zero_bytes);
  EXPECT_NEAR(f_tp.x[kCommExposed], (tp_bytes + zero_bytes) / 1e9, 1e-12);
  EXPECT_NEAR(f_tp.x[kOptimizer],
              double(part.shard_size()) * (d + 12 + 12 + d) / r.memory_bytes_per_s, 1e-15);
  // Without tp nothing changes: tensor_model_parallel_size 1 is the plain model.
  json one = patch;
  one["tensor_model_parallel_size"] = 1;
  EXPECT_EQ(step_features(engine::parse_config(tiny(one), 2), 2, r).x, f_flat.x);
}

TEST(TensorLayouts, WithAPipelineTheBusiestStageCountsItsOwnCollectivesInEverySlot) {
  const ClusterRates r = test::linear_rates(2);
  const json patch = {{"gradient_accumulation_steps", 4},
                      {"tensor_model_parallel_size", 2},
                      {"pipeline", {{"stages", 2}}}};
  const auto cfg = engine::parse_config(tiny(patch), 4);  // tp 2 × pp 2, dp 1
  engine::GPT2 whole(cfg.model, 128), piece(cfg.model, 128, {2, 0});
  const TensorCost tc = tensor_cost(cfg, whole, piece, r);
  // One block per stage; the last stage adds lm_head's all-reduce and the
  // loss gather to its 4, the first only the embedding's.
  EXPECT_EQ(tc.all_reduces, 5);
  EXPECT_EQ(tc.loss_gathers, 1);
  const double G = 4, P = 2, act = 16 * 32 * 4.0, gathered = 2 * 2 * 16 * 4.0;
  EXPECT_NEAR(tc.per_micro_s, (5 * act + gathered) / 1e9, 1e-15);
  EXPECT_DOUBLE_EQ(tc.bytes_per_step, G * (5 * act + gathered) + 8);
  const PipelineCost pc = pipeline_cost(cfg, piece, 4, r);
  EXPECT_EQ(pc.data_parallel, 1);
  // A rank ties its own half of the vocabulary rows.
  EXPECT_DOUBLE_EQ(pc.tied_bytes, 64.0 * 32 * 4);
  const auto f = step_features(cfg, 4, r);
  EXPECT_NEAR(f.x[kCommExposed],
              pc.p2p_s + pc.tied_s + (G + P - 1) * (5 * act + gathered) / 1e9 + 8 / 1e9, 1e-12);
  EXPECT_DOUBLE_EQ(f.comm_bytes_per_step, pc.p2p_bytes + pc.tied_bytes + tc.bytes_per_step);
}

TEST(TensorLayouts, ACheckpointedBlockRepeatsItsAttentionOutputAllReduce) {
  const ClusterRates r = test::linear_rates(2);
  json patch = {{"tensor_model_parallel_size", 2},
                {"hybrid", {{"activation_checkpointing", {{"every", 1}}}}}};
  const auto cfg = engine::parse_config(tiny(patch), 2);
  engine::GPT2 whole(cfg.model, 128), piece(cfg.model, 128, {2, 0});
  // Its recompute runs attn.c_proj again, not mlp.c_proj (Block::recompute_order).
  EXPECT_EQ(tensor_cost(cfg, whole, piece, r).all_reduces, 5 * 2 + 2);
}

}  // namespace
}  // namespace hybrid::autotune
