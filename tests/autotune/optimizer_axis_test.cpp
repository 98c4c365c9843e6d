// The optimizer axis (optimizer.type, short name opt): its parsing and
// validation, the params a switched candidate keeps and its freeze step, the
// trial's freeze moved before the measured window (checked against the
// engine's own optimizers), the refused combinations dropped with their
// reasons, and the cost model's ranking of 1-bit against AdamW on a slow and
// on a fast link.
#include "autotune/optimizer_axis.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/cost_model.h"
#include "autotune/sweep_plan.h"
#include "autotune/tune_error.h"
#include "engine/comm/communicator.h"
#include "engine/optim/optimizer.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string error_of(const json& space) {
  try {
    parse_space(space);
  } catch (const TuneError& e) {
    return e.what();
  }
  return "(no error)";
}

const Candidate* find_key(const Enumeration& e, const std::string& key) {
  for (const auto& c : e.candidates)
    if (c.key == key) return &c;
  return nullptr;
}

const DroppedCandidate* find_dropped(const Enumeration& e, const std::string& key) {
  for (const auto& d : e.dropped)
    if (d.key == key) return &d;
  return nullptr;
}

TEST(OptimizerAxis, ParsesUnderEverySpellingAndStaysOutOfTheDefaultSpace) {
  for (const char* text :
       {R"({"opt": ["AdamW", "OneBitAdam"]})", R"({"optimizer.type": ["AdamW", "OneBitAdam"]})",
        R"({"optimizer": {"type": {"values": ["AdamW", "OneBitAdam"]}}})",
        R"({"optimizer": ["AdamW", "OneBitAdam", "AdamW"]})"}) {
    const SearchSpace s = parse_space(json::parse(text));
    ASSERT_EQ(s.axes.size(), 1u) << text;
    EXPECT_EQ(s.axes[0].def->short_name, "opt") << text;
    EXPECT_EQ(s.axes[0].values, (std::vector<json>{"AdamW", "OneBitAdam"})) << text;
  }
  EXPECT_EQ(parse_space(json::parse(R"({"opt": ["Lamb", "OneBitLamb"]})")).grid_size(), 2u);
  EXPECT_EQ(default_space(AutotuningOptions{}).find("optimizer.type"), nullptr);
}

TEST(OptimizerAxis, BadValuesAreNamedErrors) {
  EXPECT_THAT(error_of(json::parse(R"({"opt": ["AdamW", "Adagrad"]})")),
              HasSubstr("space: opt must be one of Adam, AdamW, OneBitAdam, ZeroOneAdam, Lamb, "
                        "OneBitLamb, got \"Adagrad\""));
  EXPECT_THAT(error_of(json::parse(R"({"optimizer.type": ["SGD"]})")),
              HasSubstr("optimizer.type must be one of"));
  EXPECT_THAT(error_of(json::parse(R"({"opt": [1]})")), HasSubstr("opt must be a string, got 1"));
  EXPECT_THAT(error_of(json::parse(R"({"opt": {"range": [0, 1]}})")),
              HasSubstr("ranges are for integer keys"));
  EXPECT_THAT(error_of(json::parse(R"({"opt": ["AdamW", "OneBitLamb"]})")),
              HasSubstr("space: optimizer.type: AdamW and OneBitLamb are different algorithms"));
  EXPECT_THAT(error_of(json::parse(R"({"opt": ["OneBitAdam", "Lamb"]})")),
              HasSubstr("OneBitAdam and Lamb are different algorithms"));
}

TEST(OptimizerAxis, SwitchingKeepsSharedParamsDropsForeignOnesAndGivesAFreezeStep) {
  const json base = test::tiny_config(
      {{"optimizer",
        {{"type", "AdamW"},
         {"params",
          {{"lr", 2e-3}, {"betas", {0.8, 0.95}}, {"weight_decay", 0.1}, {"adam_w_mode", true}}}}}});
  const SearchSpace space =
      parse_space(json::parse(R"({"opt": ["AdamW", "OneBitAdam", "ZeroOneAdam"]})"));
  const Enumeration e = enumerate_candidates(base, space, test::world(2));
  ASSERT_EQ(e.candidates.size(), 3u) << (e.dropped.empty() ? "" : e.dropped[0].reason);
  const Candidate* adamw = find_key(e, "mbs=1,gas=1,stage=0,opt=AdamW");
  const Candidate* onebit = find_key(e, "mbs=1,gas=1,stage=0,opt=OneBitAdam");
  const Candidate* zero_one = find_key(e, "mbs=1,gas=1,stage=0,opt=ZeroOneAdam");
  ASSERT_TRUE(adamw && onebit && zero_one);
  EXPECT_EQ(adamw->config["optimizer"], base["optimizer"]);
  // adam_w_mode is Adam's only: OneBitAdam would refuse it as foreign.
  EXPECT_EQ(onebit->config["optimizer"]["params"],
            json::parse(R"({"lr": 2e-3, "betas": [0.8, 0.95], "weight_decay": 0.1,
                            "freeze_step": 100000})"));
  EXPECT_EQ(onebit->parsed.optimizer.type, "OneBitAdam");
  EXPECT_EQ(onebit->parsed.optimizer.freeze_step, kDefaultFreezeStep);
  EXPECT_FLOAT_EQ(onebit->parsed.optimizer.beta1, 0.8f);
  EXPECT_FLOAT_EQ(onebit->parsed.optimizer.weight_decay, 0.1f);
  EXPECT_EQ(zero_one->config["optimizer"]["params"]["var_freeze_step"], kDefaultFreezeStep);
  EXPECT_FALSE(zero_one->config["optimizer"]["params"].contains("freeze_step"));
  EXPECT_EQ(zero_one->parsed.optimizer.var_freeze_step, kDefaultFreezeStep);
}

TEST(OptimizerAxis, ABaseOneBitConfigLendsItsFreezeStepAndLosesItForAdamW) {
  const json base = test::tiny_config(
      {{"optimizer",
        {{"type", "onebitadam"},  // the engine accepts any case, so does the translation
         {"params",
          {{"lr", 1e-3}, {"freeze_step", 400}, {"cuda_aware", false}, {"my_note", "kept"}}}}}});
  const SearchSpace space =
      parse_space(json::parse(R"({"opt": ["AdamW", "OneBitAdam", "ZeroOneAdam"]})"));
  const Enumeration e = enumerate_candidates(base, space, test::world(2));
  ASSERT_EQ(e.candidates.size(), 3u) << (e.dropped.empty() ? "" : e.dropped[0].reason);
  EXPECT_EQ(find_key(e, "mbs=1,gas=1,stage=0,opt=AdamW")->config["optimizer"],
            json::parse(R"({"type": "AdamW", "params": {"lr": 1e-3, "my_note": "kept"}})"));
  const Candidate* onebit = find_key(e, "mbs=1,gas=1,stage=0,opt=OneBitAdam");
  EXPECT_EQ(onebit->parsed.optimizer.freeze_step, 400);
  EXPECT_EQ(onebit->config["optimizer"]["params"]["cuda_aware"], false);
  const Candidate* zero_one = find_key(e, "mbs=1,gas=1,stage=0,opt=ZeroOneAdam");
  EXPECT_EQ(zero_one->parsed.optimizer.var_freeze_step, 400);

  // LAMB's own coefficients cross to 1-bit LAMB.
  const json lamb = test::tiny_config(
      {{"optimizer", {{"type", "Lamb"}, {"params", {{"lr", 1e-3}, {"max_coeff", 5.0}}}}}});
  const Enumeration l = enumerate_candidates(
      lamb, parse_space(json::parse(R"({"opt": ["Lamb", "OneBitLamb"]})")), test::world(2));
  const Candidate* onebit_lamb = find_key(l, "mbs=1,gas=1,stage=0,opt=OneBitLamb");
  ASSERT_TRUE(onebit_lamb);
  EXPECT_FLOAT_EQ(onebit_lamb->parsed.optimizer.max_coeff, 5.0f);
  EXPECT_EQ(onebit_lamb->parsed.optimizer.freeze_step, kDefaultFreezeStep);
}

// The first step the engine's optimizer does not reduce gradients for (its
// compressed phase) with this config; 1000 when none of the first 999 is.
int64_t first_compressed_step(const json& trial_config) {
  const engine::Config cfg = engine::parse_config(trial_config, 1);
  auto comm = engine::comm::make_single_communicator();
  auto opt = engine::make_optimizer(cfg.optimizer, {0, 16}, comm.get());
  for (int64_t step = 1; step < 1000; ++step)
    if (!opt->reduces_gradients(step)) return step;
  return 1000;  // none within 999 steps
}

TEST(OptimizerAxis, TheTrialCompressesFromTheStepBeforeTheWindowAndTheCandidateKeepsItsFreeze) {
  for (const char* type : {"OneBitAdam", "ZeroOneAdam", "OneBitLamb"}) {
    json cfg = test::tiny_config();
    switch_optimizer(cfg, type);
    for (int start : {1, 3, 4, 9}) {
      const json trial = measured_config(cfg, start);
      // Step 1 updates nothing and step 2 is never compressed: step 3 at the earliest.
      EXPECT_EQ(first_compressed_step(trial), std::max(start - 1, 3)) << type << " " << start;
      json back = trial;
      back["optimizer"]["params"] = cfg["optimizer"]["params"];
      EXPECT_EQ(back, cfg) << "only the freeze step differs";
    }
    // Untouched, none compresses in any of those windows (0/1 Adam compresses
    // between its spaced variance steps well before its freeze).
    EXPECT_GT(first_compressed_step(cfg), 9) << type;
  }
  // A freeze already inside the warm-up stays; other optimizers are untouched.
  json early = test::tiny_config({{"optimizer", {{"params", {{"freeze_step", 0}}}}}});
  early["optimizer"]["type"] = "OneBitAdam";
  EXPECT_EQ(measured_config(early, 9), early);
  const json adamw = test::tiny_config();
  EXPECT_EQ(measured_config(adamw, 9), adamw);
}

// The sweep says where its 1-bit trials compress, and warns when they never do.
TEST(OptimizerAxis, TheSweepNotesWhereOneBitTrialsCompress) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json", json::parse(R"({"opt": ["AdamW", "OneBitAdam"]})"));
  TuneOptions o;
  o.config = dir / "cfg.json";
  o.space = dir / "space.json";
  o.nprocs = 2;
  o.dry_run = true;
  o.steps = 10;
  o.start_step = 6;
  const auto has = [](const SweepPlan& p, const std::string& text) {
    return std::any_of(p.notes.begin(), p.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has(plan_sweep(o), "1-bit optimizer trials compress from step 5"));
  o.steps = 2;
  o.start_step = 2;
  EXPECT_TRUE(has(plan_sweep(o), "ending before their first compressed step (3)"));
  o.space.clear();  // the default space: no 1-bit candidate, no note
  EXPECT_FALSE(has(plan_sweep(o), "1-bit optimizer trials"));
}

TEST(OptimizerAxis, RefusedCombinationsAreDroppedWithTheirReason) {
  const SearchSpace space =
      parse_space(json::parse(R"({"stage": [0, 1, 2, 3], "opt": ["AdamW", "OneBitAdam"]})"));
  const Enumeration e = enumerate_candidates(test::tiny_config(), space, test::world(2));
  ASSERT_EQ(e.candidates.size(), 5u);  // AdamW at every stage, OneBitAdam at stage 0
  EXPECT_TRUE(find_key(e, "mbs=1,gas=1,stage=0,opt=OneBitAdam"));
  ASSERT_EQ(e.dropped.size(), 3u);
  for (int stage : {1, 2, 3}) {
    const auto* d = find_dropped(e, fmt::format("mbs=1,gas=1,stage={},opt=OneBitAdam", stage));
    ASSERT_TRUE(d) << stage;
    EXPECT_THAT(
        d->reason,
        HasSubstr(fmt::format("optimizer.type OneBitAdam with zero_optimization.stage {}", stage)));
  }
  const SearchSpace opt_only = parse_space(json::parse(R"({"opt": ["AdamW", "OneBitAdam"]})"));
  const Enumeration clipped = enumerate_candidates(test::tiny_config({{"gradient_clipping", 1.0}}),
                                                   opt_only, test::world(2));
  ASSERT_EQ(clipped.dropped.size(), 1u);
  EXPECT_THAT(clipped.dropped[0].reason, HasSubstr("with gradient_clipping 1"));
  const Enumeration tp = enumerate_candidates(
      test::tiny_config({{"tensor_model_parallel_size", 2}}), opt_only, test::world(2));
  ASSERT_EQ(tp.dropped.size(), 1u);
  EXPECT_THAT(tp.dropped[0].reason, HasSubstr("with tensor or pipeline parallelism"));
}

// Every collective takes alpha + bytes / bandwidth, sampled at sizes 4^k.
ClusterRates alpha_beta_rates(double alpha_s, double bytes_per_s) {
  ClusterRates r = test::linear_rates(2);
  r.gemm_flops_per_s = 1e12;  // the step's compute small beside the link
  r.bandwidth.clear();
  for (const char* op : {"all_reduce", "reduce_scatter", "all_gather", "all_to_all"})
    for (uint64_t b = 1; b <= (uint64_t(1) << 32); b *= 4)
      r.bandwidth.push_back({op, b, double(b) / (alpha_s + double(b) / bytes_per_s) / 1e9, 0.0});
  return r;
}

TEST(OptimizerAxis, TheCostModelRanksOneBitFasterOnASlowLinkAndSlowerOnAFastOne) {
  const json base = test::tiny_config({{"hybrid",
                                        {{"model",
                                          {{"n_layer", 2},
                                           {"n_embd", 256},
                                           {"n_head", 4},
                                           {"vocab_size", 8192},
                                           {"seq_len", 64}}}}}});
  const Enumeration e = enumerate_candidates(
      base, parse_space(json::parse(R"({"opt": ["AdamW", "OneBitAdam"]})")), test::world(2));
  ASSERT_EQ(e.candidates.size(), 2u);
  const engine::Config& adamw = e.candidates[0].parsed;
  const engine::Config& onebit = e.candidates[1].parsed;
  ASSERT_EQ(onebit.optimizer.type, "OneBitAdam");
  const CostModel model;  // the prior weights
  // 1 Gbit/s and 50 us: the fp32 gradients' 16 MB take 0.13 s, 1 bit of each far less.
  const ClusterRates slow = alpha_beta_rates(50e-6, 1.25e8);
  const double slow_adamw = model.predict_s(step_features(adamw, 2, slow));
  const double slow_onebit = model.predict_s(step_features(onebit, 2, slow));
  EXPECT_LT(slow_onebit, slow_adamw / 2);
  // 100 GB/s and 50 us: the fp32 all-reduce takes well under a millisecond, less
  // than the 1-bit step's own work on its host buffers (96 bytes a parameter
  // streamed in fp32, AdamW's 32) plus its four exchanges.
  const ClusterRates fast = alpha_beta_rates(50e-6, 1e11);
  const double fast_adamw = model.predict_s(step_features(adamw, 2, fast));
  const double fast_onebit = model.predict_s(step_features(onebit, 2, fast));
  EXPECT_GT(fast_onebit, fast_adamw);
  std::printf(
      "predicted step: slow link AdamW %.2f ms, OneBitAdam %.2f ms; fast link AdamW "
      "%.2f ms, OneBitAdam %.2f ms\n",
      1e3 * slow_adamw, 1e3 * slow_onebit, 1e3 * fast_adamw, 1e3 * fast_onebit);
}

}  // namespace
}  // namespace hybrid::autotune
