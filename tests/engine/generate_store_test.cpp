// hybrid-generate --bench and --db, the real binary on a real SQLite file: the
// bench's figures (mean and sample standard deviation of its repetitions'
// tokens/s, recomputed here from the samples it prints), its tests fit to the
// block size, and the rows it records; a generate run's stored latency
// percentiles recomputed from the times it writes (NumPy's linear rule, written
// out here); a bad --db (a folder, a store of a newer schema) or bad input
// exits 2 naming it, with nothing written; weights that fail to load end the
// run config_error. No timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "profiler/store/run_store.h"
#include "tests/profiler/store_test_util.h"

namespace hybrid {
namespace {

using profiler::GenerationKind;

// An untrained tiny GPT-2 (block size 16) in llm.c's format: timing needs no training.
std::string tiny_llmc_file(const test::TempDir& dir) {
  const auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  const std::string path = dir / "tiny.bin";
  e->model().write_weights(e->module_tree(), e->gather_parameters(), {path, ""});
  return path;
}

test::CommandResult generate_tool(const std::string& args) {
  return test::run_command(test::tool("hybrid-generate") + " " + args);
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double sample_sd_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

// NumPy's default percentile: linear between the order statistics.
double numpy_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = (double(v.size()) - 1) * q;
  const size_t lo = size_t(std::floor(h)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - double(lo)) * (v[hi] - v[lo]);
}

void expect_percentiles_of(const std::optional<profiler::LatencyPercentiles>& stored,
                           const nlohmann::json& samples) {
  ASSERT_TRUE(stored);
  const auto v = samples.get<std::vector<double>>();
  EXPECT_NEAR(stored->p50, numpy_percentile(v, 0.5), 1e-9);
  EXPECT_NEAR(stored->p90, numpy_percentile(v, 0.9), 1e-9);
  EXPECT_NEAR(stored->p99, numpy_percentile(v, 0.99), 1e-9);
}

TEST(GenerateBench, MeanAndSdOfTheRepetitionsPrintedWrittenAndStored) {
  test::TempDir dir;
  const std::string model = tiny_llmc_file(dir), out = dir / "bench.json", db = dir / "runs.db";
  const auto r = generate_tool("--model " + model +
                               " --bench --bench-pp 8 --bench-tg 6 --repetitions 3 --batch 2"
                               " --json " +
                               out + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* cell : {"model", "threads", "t/s", "pp8", "tg6", "gpt2 ", "fp32", " ± "})
    EXPECT_NE(r.output.find(cell), std::string::npos) << cell << "\n" << r.output;
  const auto j = test::read_json(out);
  ASSERT_EQ(j["bench"].size(), 2u);
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto rows = store.generations(j["run_id"].get<int64_t>());
  ASSERT_EQ(rows.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& t = j["bench"][i];
    SCOPED_TRACE(t["test"].get<std::string>());
    const auto samples = t["samples_tokens_per_s"].get<std::vector<double>>();
    ASSERT_EQ(samples.size(), 3u);
    EXPECT_NEAR(t["tokens_per_s"]["mean"].get<double>(), mean_of(samples), 1e-9 * mean_of(samples));
    EXPECT_NEAR(t["tokens_per_s"]["sd"].get<double>(), sample_sd_of(samples),
                1e-9 * mean_of(samples));
    EXPECT_EQ(rows[i].kind, GenerationKind::bench);
    EXPECT_EQ(rows[i].test, t["test"].get<std::string>());
    EXPECT_EQ(rows[i].tokens_per_s, t["tokens_per_s"]["mean"].get<double>());
    EXPECT_EQ(rows[i].tokens_per_s_sd, t["tokens_per_s"]["sd"].get<double>());
    EXPECT_EQ(rows[i].repetitions, 3);
    EXPECT_EQ(rows[i].batch, 2);
    EXPECT_EQ(rows[i].dtype, "fp32");
    EXPECT_GT(rows[i].tokens_per_s, 0.0);
  }
  EXPECT_EQ(rows[0].test, "pp8");
  EXPECT_EQ(rows[0].prompt_tokens, 16);  // two rows of 8
  EXPECT_EQ(rows[0].new_tokens, 2);      // a prefill's first token each
  EXPECT_FALSE(rows[0].tpot_ms) << "a prefill alone has no decode step";
  EXPECT_EQ(rows[1].test, "tg6");
  EXPECT_EQ(rows[1].new_tokens, 14);  // the prefill's token and 6 decoded, each row
  EXPECT_TRUE(rows[1].tpot_ms);
  const auto run = store.get_run(rows[0].run_id);
  EXPECT_EQ(run.status, profiler::RunStatus::ok);
  EXPECT_EQ(run.name, "hybrid-generate --bench");
  EXPECT_EQ(run.backend, "cpu");
  EXPECT_EQ(run.micro_batch, 2);
  EXPECT_GT(run.n_params, 0u);
}

TEST(GenerateBench, LlamaBenchDefaultsShrinkToTheBlockAndTooLargeSizesAreRefused) {
  test::TempDir dir;
  const std::string model = tiny_llmc_file(dir), out = dir / "bench.json";
  const auto r = generate_tool("--model " + model + " --bench --repetitions 1 --json " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = test::read_json(out);
  ASSERT_EQ(j["bench"].size(), 2u);
  EXPECT_EQ(j["bench"][0]["test"], "pp15");  // and its first new token: 16
  EXPECT_EQ(j["bench"][1]["test"], "tg14");  // a prompt token, the first new one, 14 decoded
  EXPECT_EQ(j["bench"][0]["tokens_per_s"]["sd"], 0.0);

  const auto only_tg = generate_tool(
      "--model " + model + " --bench --bench-pp 0 --bench-tg 2,3 --repetitions 1 --json " + out);
  ASSERT_EQ(only_tg.exit_code, 0) << only_tg.output;
  const auto k = test::read_json(out);
  ASSERT_EQ(k["bench"].size(), 2u);
  EXPECT_EQ(k["bench"][0]["test"], "tg2");
  EXPECT_EQ(k["bench"][1]["test"], "tg3");
}

TEST(GenerateStore, AGenerateRunStoresThePercentilesOfItsTimes) {
  test::TempDir dir;
  const std::string model = tiny_llmc_file(dir), out = dir / "gen.json", db = dir / "runs.db";
  const auto r = generate_tool("--model " + model +
                               " --prompt-tokens 5,9,1 --prompt-tokens 7 --prompt-tokens 3,3"
                               " --max-new-tokens 9 --batch 2 --dtype bf16 --name mine --db " +
                               db + " --json " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("recorded as run 1 in " + db), std::string::npos) << r.output;
  const auto j = test::read_json(out);
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto rows = store.generations();
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows[0];
  EXPECT_EQ(row.run_id, j["run_id"].get<int64_t>());
  EXPECT_EQ(row.kind, GenerationKind::generate);
  EXPECT_EQ(row.dtype, "bf16");
  EXPECT_EQ(row.batch, 2);
  EXPECT_EQ(row.prompts, 3);
  EXPECT_EQ(row.prompt_tokens, 6);
  EXPECT_EQ(row.new_tokens, 27);
  EXPECT_EQ(row.new_tokens, j["new_tokens"].get<int64_t>());
  EXPECT_EQ(row.tokens_per_s, j["tokens_per_s"].get<double>());
  ASSERT_EQ(j["ttft_ms"]["samples"].size(), 3u);   // one per prompt
  ASSERT_EQ(j["tpot_ms"]["samples"].size(), 16u);  // 8 decode steps in each of 2 batches
  expect_percentiles_of(row.ttft_ms, j["ttft_ms"]["samples"]);
  expect_percentiles_of(row.tpot_ms, j["tpot_ms"]["samples"]);
  const auto run = store.get_run(row.run_id);
  EXPECT_EQ(run.name, "mine");
  EXPECT_EQ(run.status, profiler::RunStatus::ok);
  EXPECT_EQ(run.dtype, "bf16");
  EXPECT_EQ(run.seq_len, 16);
  EXPECT_EQ(run.micro_batch, 2);
  EXPECT_EQ(nlohmann::json::parse(run.summary_json)["new_tokens"], 27);
}

TEST(GenerateStore, ABadDbOrBadInputExitsTwoAndWritesNothing) {
  test::TempDir dir;
  const std::string model = tiny_llmc_file(dir), out = dir / "out.json";
  const auto refused = [&](const std::string& args, const std::string& says) {
    SCOPED_TRACE(args);
    const auto r = generate_tool("--model " + model + " --json " + out + " " + args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out));
  };
  const std::string folder = dir / "a_folder";
  std::filesystem::create_directories(folder);
  refused("--prompt-tokens 1 --max-new-tokens 4 --db " + folder,
          "--db " + folder + ": database " + folder);
  EXPECT_TRUE(std::filesystem::is_empty(folder));

  const std::string newer = dir / "newer.db";
  { profiler::RunStore store(newer); }
  profiler::test::exec_sql(newer, "PRAGMA user_version = 99");
  const std::string schema_before =
      profiler::test::query_sql(newer, "SELECT sql FROM sqlite_schema");
  refused("--bench --repetitions 1 --db " + newer, "has schema version 99, newer than this build");
  EXPECT_EQ(profiler::test::query_sql(newer, "PRAGMA user_version"), "99");
  EXPECT_EQ(profiler::test::query_sql(newer, "SELECT count(*) FROM runs"), "0");
  EXPECT_EQ(profiler::test::query_sql(newer, "SELECT sql FROM sqlite_schema"), schema_before);

  // Input checked before the store is opened: no file, no run.
  const std::string fresh = dir / "fresh.db";
  refused("--prompt-tokens 1,64 --db " + fresh, "outside the vocabulary");
  refused("--bench --bench-pp 100 --db " + fresh,
          "--bench-pp 100: past the model's block size (15 at most");
  refused("--bench --bench-tg 15 --db " + fresh, "--bench-tg 15: past the model's block size");
  refused("--bench --bench-pp 0 --bench-tg 0 --db " + fresh, "no test left to run");
  refused("--bench --prompt-tokens 1 --db " + fresh, "--bench makes its own prompts");
  refused("--bench --repetitions 0", "--repetitions");
  EXPECT_FALSE(std::filesystem::exists(fresh));
}

// Weights found damaged only when they load (a Hugging Face directory's
// safetensors, after its config.json passed): the run was created, and ends
// config_error with the loader's message.
TEST(GenerateStore, WeightsThatFailToLoadEndTheRunAsConfigError) {
  test::TempDir dir;
  const auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  const std::string hf = dir / "hf", db = dir / "runs.db";
  e->model().write_weights(e->module_tree(), e->gather_parameters(), {"", hf});
  for (const auto& f : std::filesystem::directory_iterator(hf))
    if (f.path().extension() == ".safetensors") std::filesystem::resize_file(f.path(), 100);
  const auto r =
      generate_tool("--model " + hf + " --prompt-tokens 1 --max-new-tokens 2 --db " + db);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, profiler::RunStatus::config_error);
  EXPECT_FALSE(runs[0].error.empty());
  EXPECT_NE(r.output.find(runs[0].error), std::string::npos) << r.output;
  EXPECT_TRUE(store.generations().empty());
}

}  // namespace
}  // namespace hybrid
