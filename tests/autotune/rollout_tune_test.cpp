// `hybrid-tune generate` in rollout mode (a spec naming a training config): the
// spec's errors name the key; the candidates are inference_tp_size ×
// pin_parameters × batch × cache dtype, each a trial config the engine's own
// parser checks (its refusals are the pruning reasons), pin_parameters without
// effect pruned as the same run, the memory per rank predicted with the pinned
// parameters, the cache and the replica, over the budget pruned; and a real
// sweep of hybrid-train trials on 2 MPI ranks names the best by the rollouts'
// measured tokens/s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "autotune/rollout_space.h"
#include "autotune/rollout_sweep.h"
#include "autotune/tune_error.h"
#include "engine/generate/prompts.h"
#include "engine/inference_replica.h"
#include "engine/memory_model.h"
#include "kernels/registry.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A tiny GPT-2 under ZeRO-3 (`stage`) and 4 prompts of 1–5 tokens. At most
// 1000 parameters live when training gathers (no prefetch past one module):
// a pinned call, which gathers them all, holds more.
struct Files {
  test::TempDir dir;
  std::string config = dir / "ds.json", prompts = dir / "prompts.jsonl";
  explicit Files(int stage = 3) {
    test::write_json(config, test::tiny_config({{"zero_optimization",
                                                 {{"stage", stage},
                                                  {"stage3_max_live_parameters", 1000},
                                                  {"stage3_param_persistence_threshold", 100}}}}));
    std::ofstream(prompts) << "{\"tokens\": [1, 2, 3, 4, 5]}\n{\"tokens\": [7]}\n"
                           << "{\"tokens\": [9, 9]}\n{\"tokens\": [3, 1, 4]}\n";
  }
  json spec(const json& patch = json::object()) const {
    json j = {{"config", config}, {"prompts", prompts}, {"nprocs", 2}, {"max_new_tokens", 4}};
    j.merge_patch(patch);
    return j;
  }
};

std::string spec_error(const json& j) {
  try {
    parse_rollout_spec(j);
  } catch (const TuneError& e) {
    return e.what();
  }
  return "";
}

TEST(RolloutTune, SpecErrorsNameTheKey) {
  Files f;
  EXPECT_EQ(spec_error(f.spec()), "");
  EXPECT_THAT(spec_error(f.spec({{"inference_tp", {1, 2}}})),
              HasSubstr("inference_tp: unknown key"));
  EXPECT_THAT(spec_error(f.spec({{"inference_tp_size", {1, 4}}})),
              HasSubstr("inference_tp_size: 4 does not divide nprocs 2"));
  EXPECT_THAT(spec_error(f.spec({{"inference_tp_size", {0}}})),
              HasSubstr("inference_tp_size: 0 is not a positive integer"));
  EXPECT_THAT(spec_error(f.spec({{"pin_parameters", {true, "no"}}})),
              HasSubstr("pin_parameters: \"no\" is not true or false"));
  EXPECT_THAT(spec_error(f.spec({{"batch", {2, 0}}})),
              HasSubstr("batch: 0 is not a positive integer"));
  EXPECT_THAT(spec_error(f.spec({{"cache_dtype", "fp8"}})),
              HasSubstr("cache_dtype: \"fp8\" is not one of"));
  EXPECT_THAT(spec_error(f.spec({{"model", "m.bin"}})), HasSubstr("model: a rollout spec"));
  EXPECT_THAT(spec_error(f.spec({{"dtype", "bf16"}})), HasSubstr("dtype: a rollout spec"));
  EXPECT_THAT(spec_error(f.spec({{"steps", 2}, {"every", 3}})),
              HasSubstr("every: 3 is past steps 2"));
  EXPECT_THAT(spec_error(f.spec({{"metric", "latency"}})),
              HasSubstr("metric: \"latency\" is not tokens_per_s or latency_p99"));
  EXPECT_THAT(spec_error(f.spec({{"config", f.dir / "none.json"}})),
              HasSubstr("config: cannot read"));
  json no_prompts = f.spec();
  no_prompts.erase("prompts");
  EXPECT_THAT(spec_error(no_prompts), HasSubstr("prompts: give it here or as the config's"));
  // The config's rollout block gives the prompts and max_new_tokens when the spec does not.
  json cfg = test::read_json(f.config);
  cfg["hybrid"]["rollout"] = {{"prompts", f.prompts}, {"max_new_tokens", 7}};
  test::write_json(f.config, cfg);
  no_prompts.erase("max_new_tokens");
  const RolloutSpec s = parse_rollout_spec(no_prompts);
  EXPECT_EQ(s.prompts, f.prompts);
  EXPECT_EQ(s.max_new_tokens, 7);
  EXPECT_EQ(s.cache_dtypes, std::vector<kernels::DType>{kernels::DType::f32}) << "the config's";
  EXPECT_EQ(s.pins, std::vector<bool>{true}) << "DeepSpeed's default";
  EXPECT_TRUE(is_rollout_spec(no_prompts));
  EXPECT_FALSE(is_rollout_spec(json{{"model", "m.bin"}, {"prompts", "p"}}));
}

std::map<std::string, RolloutCandidate> by_key(const std::vector<RolloutCandidate>& cs) {
  std::map<std::string, RolloutCandidate> m;
  for (const auto& c : cs) m[c.key()] = c;
  return m;
}

TEST(RolloutTune, CandidatesArePrunedWithTheEnginesReasonsAndTheirMemory) {
  Files f;
  const auto prompts = engine::read_prompts_file(f.prompts);
  RolloutSpec s = parse_rollout_spec(f.spec({{"nprocs", 4},
                                             {"inference_tp_size", {1, 2, 4}},
                                             {"pin_parameters", {false, true}},
                                             {"batch", {1, 8}}}));
  auto all = rollout_candidates(s, prompts);
  // 4 prompts over 4 ranks: one each, so batch 8 is batch 1 (tried once).
  ASSERT_EQ(all.size(), 6u);
  auto c = by_key(all);
  EXPECT_EQ(c["b1-fp32-tp1-nopin"].pruned, "");
  EXPECT_EQ(c["b1-fp32-tp1-pin"].pruned, "");
  EXPECT_EQ(c["b1-fp32-tp2-nopin"].pruned, "");
  EXPECT_THAT(c["b1-fp32-tp2-pin"].pruned, HasSubstr("the same run as b1-fp32-tp2-nopin"));
  // The tiny GPT-2 has 2 heads: the engine's own check refuses 4 ways.
  EXPECT_THAT(c["b1-fp32-tp4-nopin"].pruned,
              HasSubstr("hybrid_engine.inference_tp_size 4 does not divide hybrid.model.n_head 2"));
  // The trial config: the base with the hybrid engine and the rollout set.
  const json& cfg = c["b1-fp32-tp2-nopin"].config;
  EXPECT_EQ(cfg["hybrid_engine"]["enabled"], true);
  EXPECT_EQ(cfg["hybrid_engine"]["inference_tp_size"], 2);
  EXPECT_EQ(cfg["hybrid_engine"]["pin_parameters"], false);
  EXPECT_EQ(cfg["hybrid"]["rollout"]["batch"], 1);
  EXPECT_EQ(cfg["hybrid"]["rollout"]["prompts"], f.prompts);
  EXPECT_EQ(cfg["hybrid"]["rollout"]["every"], 1);

  // Memory: pinning holds every gathered unit, more than training's one module
  // at a time (the sweep below holds the prediction to the measured peak).
  const auto parsed = engine::parse_config(c["b1-fp32-tp1-pin"].config, 4);
  EXPECT_GT(engine::predict_pinned_parameters(parsed), 0u);
  EXPECT_GT(c["b1-fp32-tp1-pin"].predicted_bytes, c["b1-fp32-tp1-nopin"].predicted_bytes);
  // The cache by hand: 2 layers × keys and values × rows × heads × (5 + 4)
  // positions × head size 16 × 4 bytes; tp 2 batches 2 rows of 1 head a rank.
  EXPECT_EQ(c["b1-fp32-tp1-nopin"].predicted_cache, 2u * 2 * 1 * 2 * 9 * 16 * 4);
  EXPECT_EQ(c["b1-fp32-tp2-nopin"].predicted_cache, 2u * 2 * 2 * 1 * 9 * 16 * 4);
  // The replica is counted beside the trainer, with its whole logits (2 rows,
  // fp32) and the cache's positions (a kept cache's: max(rows, 9 tokens)).
  auto backend = kernels::make_backend("auto", 0);
  const auto tp2 = engine::parse_config(c["b1-fp32-tp2-nopin"].config, 4);
  const auto replica = InferenceReplica::config_for(tp2, 4);
  EXPECT_EQ(c["b1-fp32-tp2-nopin"].predicted_bytes,
            engine::predict_memory(tp2, 4, *backend.backend).total() +
                engine::predict_memory(replica, 4, *backend.backend).total() +
                2u * uint64_t(replica.padded_vocab()) * 4 + c["b1-fp32-tp2-nopin"].predicted_cache +
                9 * 4);

  // A budget that holds the unpinned run but not the pinned one.
  s.memory_budget = c["b1-fp32-tp1-nopin"].predicted_bytes;
  c = by_key(rollout_candidates(s, prompts));
  EXPECT_EQ(c["b1-fp32-tp1-nopin"].pruned, "");
  EXPECT_THAT(c["b1-fp32-tp1-pin"].pruned, HasSubstr("> memory budget"));
  EXPECT_EQ(c["b1-fp32-tp1-nopin"].config["hybrid"]["memory_budget"], s.memory_budget);

  // Under ZeRO-2 pin_parameters has no effect on any candidate.
  Files zero2(2);
  s = parse_rollout_spec(zero2.spec({{"pin_parameters", {true, false}}}));
  c = by_key(rollout_candidates(s, prompts));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c["b2-fp32-tp1-pin"].pruned, "") << "a rank's share of 2 prompts: batch 2";
  EXPECT_THAT(c["b2-fp32-tp1-nopin"].pruned, HasSubstr("the same run as b2-fp32-tp1-pin"));
  // Prompts that do not share out over the data-parallel ranks.
  s = parse_rollout_spec(zero2.spec({{"nprocs", 3}}));
  EXPECT_THAT(rollout_candidates(s, prompts)[0].pruned,
              HasSubstr("4 prompts do not share out evenly over 3 data-parallel ranks"));
}

TEST(RolloutTune, ReadsTheRolloutsLeavingTheFirstOut) {
  const json result = {{"rollouts",
                        {{{"new_tokens", 100},
                          {"gather_ms", 10.0},
                          {"generate_ms", 990.0},
                          {"tpot_ms", {{"samples", {50.0}}}}},
                         {{"new_tokens", 40},
                          {"gather_ms", 100.0},
                          {"generate_ms", 100.0},
                          {"tpot_ms", {{"samples", {1.0, 2.0}}}}},
                         {{"new_tokens", 40},
                          {"gather_ms", 0.0},
                          {"generate_ms", 200.0},
                          {"tpot_ms", {{"samples", {3.0, 4.0}}}}}}}};
  RolloutTrial t;
  EXPECT_EQ(read_rollouts(t, result, Metric::tokens), "");
  EXPECT_EQ(t.rollouts, 2);
  EXPECT_DOUBLE_EQ(t.tokens_per_s, 80 / 0.4);
  EXPECT_DOUBLE_EQ(t.value, t.tokens_per_s);
  EXPECT_LT(t.tpot_p99_ms, 50.0) << "the first rollout's decode steps are left out";
  EXPECT_GT(t.tpot_p99_ms, 3.0);
  EXPECT_EQ(read_rollouts(t, result, Metric::latency), "");
  EXPECT_DOUBLE_EQ(t.value, t.tpot_p99_ms);
  EXPECT_EQ(read_rollouts(t, json{{"status", "ok"}}, Metric::tokens), "the result has no rollouts");
}

TEST(RolloutTune, ASweepOnTwoRanksRunsTheRolloutsAndNamesTheBest) {
  Files f;
  const json spec = f.spec({{"steps", 2},
                            {"every", 1},
                            {"trial_timeout", 120},
                            {"inference_tp_size", {1, 2}},
                            {"pin_parameters", {false, true}},
                            {"batch", {1, 2}}});
  test::write_json(f.dir / "spec.json", spec);
  const std::string dir = f.dir / "tune", out = dir + "/best.json", db = f.dir / "runs.db";
  const auto r = test::run_command(test::tune_bin() + " generate --spec " + f.dir / "spec.json" +
                                   " --dir " + dir + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = test::read_json(out);
  // --db: each trial's hybrid-train recorded its run, named by the trial's key,
  // with its two rollouts.
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  std::map<std::string, int> rollouts_of;
  for (const auto& run : store.list_runs())
    for (const auto& g : store.generations(run.id))
      rollouts_of[run.name] += g.kind == profiler::GenerationKind::rollout;
  EXPECT_EQ(j["mode"], "rollout");
  EXPECT_EQ(j["metric"], "tokens_per_s");
  ASSERT_EQ(j["trials"].size(), 8u);
  double best = 0;
  std::string best_key;
  int ran = 0;
  for (const auto& t : j["trials"]) {
    const std::string key = t["key"];
    SCOPED_TRACE(key);
    if (key.find("tp2-pin") != std::string::npos) {
      EXPECT_EQ(t["status"], "pruned");
      EXPECT_THAT(t["reason"].get<std::string>(), HasSubstr("the same run as"));
      EXPECT_FALSE(std::filesystem::exists(dir + "/" + key)) << "a pruned candidate ran";
      continue;
    }
    ASSERT_EQ(t["status"], "ok") << t["reason"];
    ++ran;
    EXPECT_EQ(rollouts_of["hybrid-tune rollout " + key], 2);
    EXPECT_EQ(t["rollouts"], 1) << "two rollouts, the first left out";
    const double v = t["tokens_per_s"];
    EXPECT_GT(v, 0.0);
    // The trial's own result holds the rollouts it was measured from.
    const json result = test::read_json(dir + "/" + key + "/result.json");
    ASSERT_EQ(result["rollouts"].size(), 2u);
    EXPECT_EQ(result["rollouts"][1]["batch"], t["batch"]);
    // The prediction is rank 0's measured peak on the training engine (pinned
    // or not, with its cache); a replica's engine has an allocator of its own.
    const uint64_t measured = result["peak_memory_total_bytes"];
    if (t["inference_tp_size"] == 1)
      EXPECT_EQ(measured, t["predicted_bytes"].get<uint64_t>());
    else
      EXPECT_LT(measured, t["predicted_bytes"].get<uint64_t>());
    if (v > best) best = v, best_key = key;
  }
  EXPECT_EQ(ran, 6);
  EXPECT_EQ(j["key"], best_key);
  EXPECT_EQ(j["value"].get<double>(), best);
  EXPECT_EQ(j["config"]["hybrid_engine"]["inference_tp_size"], j["inference_tp_size"]);
  EXPECT_THAT(r.output, HasSubstr("tokens/s"));
}

TEST(RolloutTune, ABadRolloutSpecExitsOneNamingItAndRunsNothing) {
  Files f;
  test::write_json(f.dir / "spec.json", f.spec({{"inference_tp_size", {1, 3}}}));
  const auto r = test::run_command(test::tune_bin() + " generate --spec " + f.dir / "spec.json" +
                                   " --dir " + f.dir / "tune");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("generate spec: inference_tp_size: 3 does not divide nprocs 2"));
  EXPECT_FALSE(std::filesystem::exists(f.dir / "tune"));
}

}  // namespace
}  // namespace hybrid::autotune
