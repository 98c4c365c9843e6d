// `hybrid-tune generate`: a spec's errors name the key; each candidate's
// memory is the engine hybrid-generate builds plus its largest call's key/value
// cache by the memory model; a candidate over the budget is pruned and never
// runs; the others run the real hybrid-generate, and the best by tokens/s (or
// by the lowest p99 time per output token) is the one the result names; with
// --db each trial is a run in the store; a confirmation writes its winner's
// median; a noisy trial is measured again and its steadiest attempt kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autotune/generate_space.h"
#include "autotune/tune_error.h"
#include "engine/engine.h"
#include "engine/generate/prompts.h"
#include "engine/memory_model.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string spec_error(const json& j) {
  try {
    parse_generate_spec(j);
  } catch (const TuneError& e) {
    return e.what();
  }
  return "";
}

TEST(GenerateTune, SpecErrorsNameTheKey) {
  const json ok = {{"model", "m.bin"}, {"prompts", "p.jsonl"}};
  EXPECT_EQ(spec_error(ok), "");
  auto with = [&](const json& patch) {
    json j = ok;
    j.merge_patch(patch);
    return spec_error(j);
  };
  EXPECT_THAT(with({{"batches", {1}}}), HasSubstr("batches: unknown key"));
  EXPECT_THAT(with({{"batch", {1, 0}}}), HasSubstr("batch: 0 is not a positive integer"));
  EXPECT_THAT(with({{"cache_dtype", "fp8"}}), HasSubstr("cache_dtype: \"fp8\" is not one of"));
  EXPECT_THAT(with({{"metric", "latency"}}),
              HasSubstr("metric: \"latency\" is not tokens_per_s or latency_p99"));
  EXPECT_THAT(with({{"metric", "latency_p99"}, {"max_new_tokens", 1}}),
              HasSubstr("max_new_tokens: latency_p99 times decode steps"));
  EXPECT_THAT(spec_error({{"prompts", "p.jsonl"}}), HasSubstr("both are required"));
  const auto s = parse_generate_spec(json{{"model", "m"},
                                          {"prompts", "p"},
                                          {"dtype", "bf16"},
                                          {"batch", {1, 4}},
                                          {"memory_budget", "1MB"},
                                          {"metric", "latency_p99"}});
  EXPECT_EQ(s.batches, (std::vector<int>{1, 4}));
  EXPECT_EQ(s.cache_dtypes, std::vector<kernels::DType>{kernels::DType::bf16});  // the dtype's
  EXPECT_EQ(s.metric, Metric::latency);
  EXPECT_GT(s.memory_budget, 0u);
}

// A tiny GPT-2 (block of 16) as an llm.c file, and 4 prompts of 1–5 tokens.
struct Files {
  test::TempDir dir;
  std::string model = dir / "model.bin", prompts = dir / "prompts.jsonl";
  Files() {
    const auto cfg = engine::parse_config(test::tiny_config());
    EngineOptions quiet;
    quiet.quiet = true;
    auto e = initialize(cfg, make_model(cfg), std::move(quiet));
    e->model().write_weights(e->module_tree(), e->gather_parameters(), {model, ""});
    std::ofstream(prompts) << "{\"tokens\": [1, 2, 3, 4, 5]}\n{\"tokens\": [7]}\n"
                           << "{\"tokens\": [9, 9]}\n{\"tokens\": [3, 1, 4]}\n";
  }
  // hybrid-tune generate on DIR/spec.json, its trials under `tune` and `flags` after.
  test::CommandResult tune(const std::string& tune, const std::string& flags) const {
    return test::run_command(test::tune_bin() + " generate --spec " + dir / "spec.json" +
                             " --dir " + tune + " " + flags);
  }
  // DIR/spec.json: batch 1 and 2, 4 new tokens, a short real sweep.
  void write_two_batch_spec() const {
    test::write_json(dir / "spec.json", json{{"model", model},
                                             {"prompts", prompts},
                                             {"max_new_tokens", 4},
                                             {"batch", {1, 2}},
                                             {"trial_timeout", 120}});
  }
};

TEST(GenerateTune, CandidatesPredictTheEngineAndTheLargestCallsCache) {
  Files f;
  GenerateSpec s = parse_generate_spec(json{{"model", f.model},
                                            {"prompts", f.prompts},
                                            {"max_new_tokens", 6},
                                            {"batch", {1, 2, 8}},
                                            {"cache_dtype", {"fp32", "bf16"}}});
  const auto target = generate_target(s);
  const auto prompts = engine::read_prompts_file(f.prompts);
  auto c = generate_candidates(s, target, prompts);
  ASSERT_EQ(c.size(), 6u);  // batch 8 is the 4 prompts' batch
  EXPECT_EQ(c[4].key(), "b4-fp32");
  // Batch 2: calls {5, 1} and {2, 3} tokens; the first is the larger, 11 positions.
  // Layers 2 × keys and values × 2 rows × 2 heads × 11 × head size 16 × 4 bytes.
  EXPECT_EQ(c[2].predicted_cache, 2u * 2 * 2 * 2 * 11 * 16 * 4);
  EXPECT_EQ(c[3].predicted_cache, c[2].predicted_cache / 2);  // bf16
  // Its positions: max(longest prompt, rows) int32s.
  EXPECT_EQ(c[2].predicted_bytes, target.engine_bytes + c[2].predicted_cache + 5 * 4);
  for (const auto& k : c) EXPECT_EQ(k.pruned, "") << k.key();
  // A budget that holds the batch of 4 in bf16 but not in fp32.
  s.memory_budget = c[5].predicted_bytes;
  c = generate_candidates(s, target, prompts);
  EXPECT_THAT(c[4].pruned, HasSubstr("> memory budget"));
  EXPECT_EQ(c[5].pruned, "");
  EXPECT_EQ(c[3].pruned, "");
}

TEST(GenerateTune, TheSweepRunsWhatFitsAndNamesTheBest) {
  Files f;
  for (const std::string metric : {"tokens_per_s", "latency_p99"}) {
    SCOPED_TRACE(metric);
    json spec = {{"model", f.model},
                 {"prompts", f.prompts},
                 {"max_new_tokens", 6},
                 {"batch", {1, 4}},
                 {"metric", metric},
                 {"trial_timeout", 120},
                 {"cache_dtype", {"fp32", "bf16"}}};
    GenerateSpec s = parse_generate_spec(spec);
    spec["memory_budget"] = generate_candidates(s, generate_target(s),
                                                engine::read_prompts_file(f.prompts))[3]
                                .predicted_bytes;  // b4-bf16 fits, b4-fp32 does not
    test::write_json(f.dir / "spec.json", spec);
    const std::string dir = f.dir / ("tune-" + metric), out = dir + "/best.json";
    const auto r = test::run_command(test::tune_bin() + " generate --spec " + f.dir / "spec.json" +
                                     " --dir " + dir + " --confirm-rounds 0 --remeasure 0");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json j = test::read_json(out);
    EXPECT_EQ(j["metric"], metric);
    ASSERT_EQ(j["trials"].size(), 4u);
    std::map<std::string, json> by_key;
    for (const auto& t : j["trials"]) by_key[t["key"].get<std::string>()] = t;
    EXPECT_EQ(by_key["b4-fp32"]["status"], "pruned");
    EXPECT_FALSE(std::filesystem::exists(dir + "/b4-fp32")) << "a pruned candidate ran";
    const bool higher = metric == "tokens_per_s";
    double best = higher ? 0 : 1e300;
    for (const std::string key : {"b1-fp32", "b1-bf16", "b4-bf16"}) {
      ASSERT_EQ(by_key[key]["status"], "ok") << key << ": " << by_key[key]["reason"];
      const double v = by_key[key][higher ? "tokens_per_s" : "tpot_p99_ms"].get<double>();
      EXPECT_GT(v, 0.0) << key;
      best = higher ? std::max(best, v) : std::min(best, v);
    }
    EXPECT_EQ(j["value"].get<double>(), best);
    const std::string winner =
        fmt::format("b{}-{}", j["batch"].get<int>(), j["cache_dtype"].get<std::string>());
    EXPECT_EQ(by_key[winner][higher ? "tokens_per_s" : "tpot_p99_ms"].get<double>(), best);
    EXPECT_THAT(r.output, HasSubstr("b4-fp32"));
  }
}

// --db: each trial is a generation run in the store, named by its key, whose
// tokens/s is the trial's; a store that cannot be opened is refused by name
// before any trial runs.
TEST(GenerateTune, WithADbEveryTrialIsAGenerationRunInTheStore) {
  Files f;
  f.write_two_batch_spec();
  const std::string db = f.dir / "runs.db", dir = f.dir / "tune";
  const auto r = f.tune(dir, "--db " + db + " --confirm-rounds 0 --remeasure 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = test::read_json(dir + "/best.json");
  ASSERT_EQ(j["trials"].size(), 2u);
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto rows = store.generations();
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& t : j["trials"]) {
    ASSERT_EQ(t["status"], "ok") << t["reason"];
    const int64_t id = t["run_id"].get<int64_t>();
    const auto row =
        std::find_if(rows.begin(), rows.end(), [&](const auto& g) { return g.run_id == id; });
    ASSERT_NE(row, rows.end()) << t["key"] << ": run " << id << " has no generation row";
    EXPECT_EQ(row->tokens_per_s, t["tokens_per_s"].get<double>());
    EXPECT_EQ(row->batch, t["batch"].get<int>());
    EXPECT_EQ(store.get_run(id).name, "hybrid-tune generate " + t["key"].get<std::string>());
    EXPECT_EQ(store.get_run(id).status, profiler::RunStatus::ok);
  }
  const std::string bad = f.dir / "not-a-store";
  std::filesystem::create_directories(bad);
  const std::string dir2 = f.dir / "tune2";
  const auto refused = f.tune(dir2, "--db " + bad);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("database " + bad + " is a directory"));
  EXPECT_FALSE(std::filesystem::exists(dir2 + "/b1-fp32")) << "a trial ran";
}

// --confirm-best: the best and the runner-up run again in interleaved rounds
// (their own trial directories), and the winner's median is what is written.
TEST(GenerateTune, AConfirmationRunsRoundsAndWritesTheWinnersMedian) {
  Files f;
  f.write_two_batch_spec();
  const std::string dir = f.dir / "tune";
  const auto r = f.tune(dir, "--confirm-best --confirm-rounds 2 --remeasure 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("confirmation (2 interleaved round(s))"));
  const json j = test::read_json(dir + "/best.json");
  const json& c = j["confirmation"];
  EXPECT_EQ(c["rounds"], 2);
  ASSERT_EQ(c["candidates"].size(), 2u);
  std::map<std::string, double> first;
  for (const auto& t : j["trials"]) first[t["key"]] = t["tokens_per_s"];
  double best = 0;
  std::string winner;
  for (const auto& k : c["candidates"]) {
    const std::string key = k["key"];
    ASSERT_EQ(k["values"].size(), 3u) << key;
    EXPECT_EQ(k["values"][0].get<double>(), first[key]) << "the sweep's value comes first";
    for (int round : {1, 2})
      EXPECT_TRUE(
          std::filesystem::exists(fmt::format("{}/confirm-{}/{}/result.json", dir, round, key)));
    std::vector<double> v = k["values"];
    std::sort(v.begin(), v.end());
    EXPECT_EQ(k["median"].get<double>(), v[1]) << key;
    if (v[1] > best) best = v[1], winner = key;
  }
  EXPECT_EQ(j["value"].get<double>(), best);
  EXPECT_EQ(fmt::format("b{}-{}", j["batch"].get<int>(), j["cache_dtype"].get<std::string>()),
            winner);
}

// The robust CV of a result file's decode steps, by type-7 quantiles written
// out here: IQR / (1.349 median).
double robust_cv_of(const json& result) {
  std::vector<double> v = result["tpot_ms"]["samples"];
  std::sort(v.begin(), v.end());
  const auto q = [&](double p) {
    const double h = double(v.size() - 1) * p;
    const size_t lo = size_t(h);
    return lo + 1 < v.size() ? v[lo] + (h - double(lo)) * (v[lo + 1] - v[lo]) : v[lo];
  };
  return (q(0.75) - q(0.25)) / (1.349 * q(0.5));
}

// A noisy trial runs again (here every trial: threshold 0) in its own
// directory, and the steadier of its attempts is the one kept.
TEST(GenerateTune, ANoisyTrialIsMeasuredAgainAndTheSteadiestKept) {
  Files f;
  f.write_two_batch_spec();
  const std::string dir = f.dir / "tune";
  const auto r = f.tune(dir, "--noise-threshold 0 --remeasure 1 --confirm-rounds 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = test::read_json(dir + "/best.json");
  ASSERT_EQ(j["trials"].size(), 2u);
  for (const auto& t : j["trials"]) {
    const std::string key = t["key"];
    SCOPED_TRACE(key);
    ASSERT_EQ(t["status"], "ok") << t["reason"];
    EXPECT_EQ(t["attempts"], 2);
    EXPECT_TRUE(t["noisy"].get<bool>());
    EXPECT_THAT(t["reason"].get<std::string>(), HasSubstr("noisy"));
    const json first = test::read_json(dir + "/" + key + "/result.json");
    const json second = test::read_json(dir + "/remeasure-2/" + key + "/result.json");
    const double cv1 = robust_cv_of(first), cv2 = robust_cv_of(second);
    const json& kept = cv2 < cv1 ? second : first;
    EXPECT_EQ(t["tokens_per_s"].get<double>(), kept["tokens_per_s"].get<double>());
    EXPECT_NEAR(t["robust_cv"].get<double>(), std::min(cv1, cv2), 1e-12);
  }
}

TEST(GenerateTune, ABadSpecExitsOneNamingItAndRunsNothing) {
  test::TempDir dir;
  test::write_json(dir / "spec.json",
                   json{{"model", dir / "none.bin"}, {"prompts", "p.jsonl"}, {"batch", {1, -2}}});
  const auto r = test::run_command(test::tune_bin() + " generate --spec " + dir / "spec.json" +
                                   " --dir " + dir / "tune");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("batch: -2 is not a positive integer"));
  EXPECT_FALSE(std::filesystem::exists(dir / "tune"));
}

}  // namespace
}  // namespace hybrid::autotune
