// hybrid.rollout in hybrid-train, the real binary under mpirun: ZeRO-3 on two
// ranks generates every N steps on the weights being trained, prints
// DeepSpeed's hybrid-engine breakdown and reports it, its parts summing to the
// iteration; the tokens are what hybrid-generate gives on the exported final
// weights; bad rollout input is refused before any step runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "engine/data/tokenizer/tokenizer.h"
#include "engine/generate/prompts.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

const std::vector<std::vector<int>> kPrompts = {{1, 2, 3}, {7}, {4, 5, 6, 7, 8}, {9, 9}};

std::string write_prompts(const test::TempDir& dir, const std::vector<std::vector<int>>& prompts,
                          const std::string& extra_line = "") {
  const std::string path = dir / "prompts.jsonl";
  std::ofstream f(path);
  for (const auto& p : prompts) f << nlohmann::json{{"tokens", p}}.dump() << "\n";
  f << extra_line;
  return path;
}

nlohmann::json rollout_patch(const std::string& prompts, int every = 2) {
  return {
      {"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 100}}},
      {"hybrid_engine", {{"enabled", true}}},
      {"hybrid", {{"rollout", {{"every", every}, {"prompts", prompts}, {"max_new_tokens", 6}}}}}};
}

TEST(Rollout, ZeroStage3OnTwoRanksPrintsAndReportsTheBreakdownEveryNSteps) {
  test::TempDir dir;
  const std::string db = dir / "runs.db";
  const auto run = test::run_hybrid_train(dir, "rl", 2, rollout_patch(write_prompts(dir, kPrompts)),
                                          "--steps 4 --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::regex line(
      R"(\|E2E latency=(\d+\.\d\d)s \|Gather latency=(\d+\.\d\d)s \((\d+\.\d\d)%\) )"
      R"(\|Generate time=(\d+\.\d\d)s \((\d+\.\d\d)%\) \|Training time=(\d+\.\d\d)s )"
      R"(\((\d+\.\d\d)%\) \|Others=(-?\d+\.\d\d) \((-?\d+\.\d\d)%\)\|CurSamplesPerSec=(\d+\.\d\d) )"
      R"(\|AvgSamplesPerSec=(\d+\.\d\d))");
  std::vector<std::smatch> printed;
  for (auto it = std::sregex_iterator(run.output.begin(), run.output.end(), line);
       it != std::sregex_iterator(); ++it)
    printed.push_back(*it);
  const auto& rollouts = run.result.at("rollouts");
  ASSERT_EQ(rollouts.size(), 2u) << run.output;
  ASSERT_EQ(printed.size(), 2u) << "rank 0 prints one line a rollout:\n" << run.output;
  for (size_t i = 0; i < 2; ++i) {
    const auto& r = rollouts[i];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r.at("step"), 2 * int(i + 1));
    EXPECT_EQ(r.at("samples"), 4);
    EXPECT_EQ(r.at("new_tokens"), 4 * 6) << "no stop tokens: max_new_tokens each";
    const double e2e = r.at("e2e_ms"), gather = r.at("gather_ms"), gen = r.at("generate_ms"),
                 train = r.at("train_ms"), other = r.at("other_ms");
    EXPECT_GT(gather, 0.0) << "ZeRO-3 gathers the parameters to generate";
    EXPECT_GT(gen, 0.0);
    EXPECT_GT(train, 0.0);
    EXPECT_NEAR(gather + gen + train + other, e2e, 1e-6 * e2e);
    EXPECT_NEAR(double(r.at("samples_per_s")), 4 / (e2e / 1e3),
                1e-9 * double(r.at("samples_per_s")));
    // The printed line says what the report holds, in seconds and percent of E2E.
    const auto& m = printed[i];
    const double fields[] = {e2e,   gather,           gather / e2e * 1e5, gen, gen / e2e * 1e5,
                             train, train / e2e * 1e5};
    for (size_t f = 0; f < 7; ++f)
      EXPECT_NEAR(std::stod(m[int(f) + 1]), fields[f] / 1e3, 0.0051) << "field " << f + 1;
    EXPECT_NEAR(std::stod(m[10]), double(r.at("samples_per_s")), 0.0051);
  }
  // The run store holds each rollout's row: the figures the result reports.
  profiler::RunStore store(db);
  const auto rows = store.generations(run.result.at("run_id").get<int64_t>());
  ASSERT_EQ(rows.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& r = rows[i];
    const auto& want = rollouts[i];
    EXPECT_EQ(r.kind, profiler::GenerationKind::rollout);
    EXPECT_EQ(r.step, want.at("step").get<int64_t>());
    EXPECT_EQ(r.prompts, 4);
    EXPECT_EQ(r.batch, 2) << "two prompts a rank";
    EXPECT_EQ(r.prompt_tokens, 3 + 1 + 5 + 2);
    EXPECT_EQ(r.new_tokens, 24);
    using Row = profiler::GenerationRow;
    const std::pair<const char*, std::optional<double> Row::*> times[] = {
        {"e2e_ms", &Row::e2e_ms},           {"gather_ms", &Row::gather_ms},
        {"generate_ms", &Row::generate_ms}, {"train_ms", &Row::train_ms},
        {"other_ms", &Row::other_ms},       {"samples_per_s", &Row::samples_per_s}};
    for (const auto& [key, field] : times) {
      ASSERT_TRUE((r.*field).has_value()) << key;
      EXPECT_DOUBLE_EQ(*(r.*field), want.at(key).get<double>()) << key;
    }
    ASSERT_TRUE(r.tpot_ms.has_value());
    EXPECT_LE(r.tpot_ms->p50, r.tpot_ms->p99);
    EXPECT_EQ(r.model.rfind("gpt2 ", 0), 0u) << r.model;
  }
  // Rank 0 generated from prompts 0 and 2 (prompt i goes to rank i mod 2): at
  // step 4, the exported final weights' tokens.
  const auto tokens = rollouts[1].at("tokens").get<std::vector<std::vector<int>>>();
  ASSERT_EQ(tokens.size(), 2u);
  const std::string out = dir / "generated.json";
  const auto g = test::run_command(test::tool("hybrid-generate") + " --model " + (dir / "rl.bin") +
                                   " --prompt-tokens 1,2,3 --prompt-tokens "
                                   "4,5,6,7,8 --max-new-tokens 6 --json " +
                                   out);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  const auto seqs = test::read_json(out).at("sequences");
  ASSERT_EQ(seqs.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(seqs[i].at("tokens").get<std::vector<int>>(), tokens[i]) << "prompt " << 2 * i;
  // hybrid_engine.inference_tp_size 2: the same weights resharded over both
  // ranks generate the same tokens.
  nlohmann::json resharded = rollout_patch(dir / "prompts.jsonl");
  resharded["hybrid_engine"]["inference_tp_size"] = 2;
  const auto tp = test::run_hybrid_train(dir, "tp", 2, resharded, "--quiet --steps 4");
  ASSERT_EQ(tp.exit_code, 0) << tp.output;
  EXPECT_EQ(tp.result.at("rollouts")[1].at("tokens"), rollouts[1].at("tokens"));
  EXPECT_EQ(tp.weights, run.weights) << "generating never touches the trained weights";
}

TEST(Rollout, BadRolloutInputIsAConfigErrorBeforeAnyStep) {
  test::TempDir dir;
  const auto refused = [&](const nlohmann::json& patch, const std::string& says, int ranks = 1) {
    SCOPED_TRACE(says);
    const auto r = test::run_hybrid_train(dir, "bad", ranks, patch,
                                          "--steps 4 --save " + std::string(dir / "ckpt"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    ASSERT_FALSE(r.result.is_null());
    EXPECT_EQ(r.result.at("status"), "config_error");
    EXPECT_EQ(r.result.value("losses", nlohmann::json::array()).size(), 0u) << "no step ran";
    EXPECT_FALSE(std::filesystem::exists(dir / "ckpt"));
  };
  const std::string file = dir / "prompts.jsonl";
  refused(rollout_patch(write_prompts(dir, kPrompts, "{\"tokens\": [1, \"x\"]}\n")),
          "prompts.jsonl:5: token \"x\" is not an integer");
  refused(rollout_patch(write_prompts(dir, {{1, 2}, {3, 64}})),
          "prompt 1: token 64 at position 1 is outside the vocabulary [0, 64)");
  refused(rollout_patch(write_prompts(dir, {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}})),
          "prompt 0: 11 tokens plus max_new_tokens 6 exceed the block size 16");
  refused(rollout_patch(write_prompts(dir, {})), "prompts.jsonl: no prompts in the file");
  refused(rollout_patch(dir / "missing.jsonl"), "missing.jsonl");
  refused({{"hybrid", {{"rollout", {{"every", 2}}}}}}, "hybrid.rollout.prompts must name");
  refused({{"hybrid", {{"rollout", {{"every", 2}, {"prompts", file}, {"top_p", 0}}}}}},
          "hybrid.rollout.top_p");
  refused(rollout_patch(write_prompts(dir, {{1}, {2}, {3}})),
          "3 prompts do not share out evenly over 2 data-parallel ranks", 2);
  refused({{"hybrid", {{"rollout", {{"every", 2}, {"prompts", file}, {"cache_dtype", "fp8"}}}}}},
          "hybrid.rollout.cache_dtype");
  refused({{"hybrid", {{"rollout", {{"every", 2}, {"prompts", file}, {"batch", -1}}}}}},
          "hybrid.rollout.batch");
}

// hybrid.rollout.batch splits a rank's prompts into calls of that many rows
// (greedy: the same tokens as one call, every call's decode steps timed), and
// hybrid.rollout.cache_dtype is the cache's: its kv_cache peak is the memory
// model's cache of the largest call in that dtype. The result reports each
// rollout's batch, tokens/s and latency percentiles.
TEST(Rollout, BatchSplitsTheCallsAndCacheDtypeSetsTheCache) {
  test::TempDir dir;
  const std::string prompts = write_prompts(dir, kPrompts);
  auto patch_with = [&](const nlohmann::json& rollout) {
    nlohmann::json p = {
        {"hybrid_engine", {{"enabled", true}, {"release_inference_cache", true}}},
        {"hybrid", {{"rollout", {{"every", 1}, {"prompts", prompts}, {"max_new_tokens", 6}}}}}};
    p["hybrid"]["rollout"].merge_patch(rollout);
    return p;
  };
  const auto whole = test::run_hybrid_train(dir, "whole", 1, patch_with(nlohmann::json::object()),
                                            "--quiet --steps 1");
  const auto split = test::run_hybrid_train(
      dir, "split", 1, patch_with({{"batch", 1}, {"cache_dtype", "bf16"}}), "--quiet --steps 1");
  const auto split32 =
      test::run_hybrid_train(dir, "split32", 1, patch_with({{"batch", 1}}), "--quiet --steps 1");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(split.exit_code, 0) << split.output;
  ASSERT_EQ(split32.exit_code, 0) << split32.output;
  const auto& w = whole.result.at("rollouts").at(0);
  const auto& s = split.result.at("rollouts").at(0);
  const auto& s32 = split32.result.at("rollouts").at(0);
  EXPECT_EQ(w.at("batch"), 4);
  EXPECT_EQ(s.at("batch"), 1);
  EXPECT_EQ(s32.at("tokens"), w.at("tokens")) << "greedy: calls of one row give the same tokens";
  // 6 new tokens: a prefill and 5 decode steps a call; one call against four.
  EXPECT_EQ(w.at("tpot_ms").at("samples").size(), 5u);
  EXPECT_EQ(s.at("tpot_ms").at("samples").size(), 20u);
  EXPECT_EQ(s.at("ttft_ms").at("samples").size(), 4u);
  for (const auto* r : {&w, &s}) {
    EXPECT_GT(r->at("tokens_per_s").get<double>(), 0.0);
    EXPECT_NEAR(r->at("tokens_per_s").get<double>(),
                r->at("new_tokens").get<double>() /
                    ((r->at("gather_ms").get<double>() + r->at("generate_ms").get<double>()) / 1e3),
                1e-9 * r->at("tokens_per_s").get<double>());
    EXPECT_LE(r->at("tpot_ms").at("p50").get<double>(), r->at("tpot_ms").at("p99").get<double>());
  }
  // The cache: the largest call is the 5-token prompt, 11 positions, in each dtype.
  const auto model = engine::parse_config(test::tiny_config_json({})).model;
  auto cache = [&](int rows, int tokens, kernels::DType dt) {
    engine::GenerationShape shape;
    shape.rows = rows, shape.max_tokens = tokens, shape.cache_dtype = dt;
    return engine::predict_kv_cache(model, shape);
  };
  EXPECT_EQ(split.result.at("peak_memory_bytes").at("kv_cache").get<uint64_t>(),
            cache(1, 11, kernels::DType::bf16));
  EXPECT_EQ(split32.result.at("peak_memory_bytes").at("kv_cache").get<uint64_t>(),
            cache(1, 11, kernels::DType::f32));
  EXPECT_EQ(whole.result.at("peak_memory_bytes").at("kv_cache").get<uint64_t>(),
            cache(4, 11, kernels::DType::f32));
}

// Text prompts: hybrid.rollout.tokenizer encodes {"text": ...} lines (after the
// beginning-of-sequence token) and decodes each rollout's new tokens into
// `texts`; the tokens are those of the same prompts given as ids. Without a
// tokenizer a text line is refused before any step.
TEST(Rollout, TextPromptsAreEncodedAndTheNewTokensDecoded) {
  test::TempDir dir;
  const std::string model_file =
      std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/sentencepiece/fortunes_bpe_1000.model";
  const auto tokenizer = engine::open_tokenizer(model_file);
  const std::vector<std::string> texts = {"Hello", "The cat"};
  const std::string text_prompts = dir / "text.jsonl", id_prompts = dir / "ids.jsonl";
  {
    std::ofstream t(text_prompts), i(id_prompts);
    for (const auto& text : texts) {
      t << nlohmann::json{{"text", text}}.dump() << "\n";
      i << nlohmann::json{{"tokens", engine::encode_prompt(*tokenizer, text)}}.dump() << "\n";
    }
  }
  auto patch = [&](const std::string& prompts, bool with_tokenizer) {
    nlohmann::json p = {
        {"hybrid",
         {{"model", {{"vocab_size", 1000}}},
          {"rollout", {{"every", 1}, {"prompts", prompts}, {"max_new_tokens", 4}}}}}};
    if (with_tokenizer) p["hybrid"]["rollout"]["tokenizer"] = model_file;
    return p;
  };
  const auto text = test::run_hybrid_train(dir, "text", 1, patch(text_prompts, true), "--steps 1");
  const auto ids = test::run_hybrid_train(dir, "ids", 1, patch(id_prompts, false), "--steps 1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  const auto& r = text.result.at("rollouts").at(0);
  EXPECT_EQ(r.at("tokens"), ids.result.at("rollouts").at(0).at("tokens"));
  ASSERT_EQ(r.at("texts").size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(r.at("texts")[i].get<std::string>(),
              tokenizer->decode(r.at("tokens")[i].get<std::vector<int>>()));
  EXPECT_TRUE(ids.result.at("rollouts").at(0).at("texts").empty()) << "no tokenizer, no texts";
  const auto refused =
      test::run_hybrid_train(dir, "bare", 1, patch(text_prompts, false), "--steps 1");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("text.jsonl:1: a \"text\" prompt needs a tokenizer"),
            std::string::npos)
      << refused.output;
}

}  // namespace
}  // namespace hybrid
