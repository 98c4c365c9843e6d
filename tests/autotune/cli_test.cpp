// The hybrid-tune command line as a user meets it: --help, errors that name
// the input, --dry-run (nothing run, nothing written), and `probe` under mpirun
// storing what the cost model reads.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include "engine/memory_model.h"
#include "kernels/registry.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(Cli, HelpListsTheOptions) {
  const auto r = test::run_command(test::tune_bin() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--config", "--space", "--nprocs", "--launcher", "--strategy", "--metric", "--db", "--out",
        "--dry-run", "--max-trials", "--time-budget", "--early-stop", "--trial-timeout", "--steps",
        "--seed", "--name", "probe"})
    EXPECT_THAT(r.output, HasSubstr(opt));
}

TEST(Cli, ErrorsNameTheInput) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json", json::parse(R"({"zero_optimization": {"stage": [1, 4]}})"));
  auto r = test::run_command(fmt::format("{} --config {} --space {} --db {}", test::tune_bin(),
                                         dir / "cfg.json", dir / "space.json", dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("zero_optimization.stage must be an integer in 0..3, got 4"));
  test::write_json(dir / "cfg2.json", test::tiny_config({{"autotuning", {{"metric", "speed"}}}}));
  r = test::run_command(
      fmt::format("{} --config {} --db {}", test::tune_bin(), dir / "cfg2.json", dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("autotuning.metric must be one of throughput, latency, flops"));
  r = test::run_command(fmt::format("{} --config {} --strategy bayes --db {}", test::tune_bin(),
                                    dir / "cfg.json", dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--strategy must be grid, random or model, got \"bayes\""));
  r = test::run_command(fmt::format("{} --config {} --launcher \"srun 'oops\" --db {}",
                                    test::tune_bin(), dir / "cfg.json", dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("unterminated"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db"));
}

// Issue 32: {"mbs": [1, 2], "mbs": [4]} gave one candidate, mbs=4, and exit 0.
TEST(Cli, SpaceWithADuplicateKeyIsRefused) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  std::ofstream(dir / "space.json") << R"({"mbs": [1, 2], "mbs": [4]})";
  const auto r =
      test::run_command(fmt::format("{} --config {} --space {} --dry-run --db {}", test::tune_bin(),
                                    dir / "cfg.json", dir / "space.json", dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir / "space.json" + ": duplicate key mbs"));
}

// Issue 32: CLI11's "Value 0 not in range 0.000000 to 1797693..." and exit 105.
// Counts are refused in our words with the documented status: 1 for hybrid-tune,
// 2 (a configuration error) for hybrid-train, which the tuner runs as its trials.
TEST(Cli, OutOfRangeCountsAreRefusedInOurWords) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  const std::string tune = fmt::format("{} --config {} --dry-run --db {}", test::tune_bin(),
                                       dir / "cfg.json", dir / "x.db");
  for (const auto& [option, message] : std::vector<std::pair<std::string, std::string>>{
           {"--nprocs 0", "--nprocs: must be at least 1, got 0"},
           {"--max-trials 0", "--max-trials: must be at least 1, got 0"},
           {"--steps -3", "--steps: must be at least 1, got -3"},
           {"--trial-timeout 0", "--trial-timeout: must be greater than 0, got 0"}}) {
    const auto r = test::run_command(tune + " " + option);
    EXPECT_EQ(r.exit_code, 1) << option << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
  }
  const auto probe = test::run_command(test::tune_bin() + " probe --nprocs 0");
  EXPECT_EQ(probe.exit_code, 1) << probe.output;
  EXPECT_THAT(probe.output, HasSubstr("--nprocs: must be at least 1, got 0"));
  const auto train = test::run_command(
      fmt::format("{} --config {} --steps 0", test::train_bin(), dir / "cfg.json"));
  EXPECT_EQ(train.exit_code, 2) << train.output;
  EXPECT_THAT(train.output, HasSubstr("--steps: must be at least 1, got 0"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db"));
}

TEST(Cli, DryRunListsCandidatesAndRunsNothing) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config({{"hybrid", {{"memory_budget", "1MiB"}}}}));
  test::write_json(dir / "space.json", json::parse(R"({"mbs": [1, 2, 64], "stage": [0, 2]})"));
  const auto r = test::run_command(
      fmt::format("{} --config {} --space {} --nprocs 2 --dry-run --db {}", test::tune_bin(),
                  dir / "cfg.json", dir / "space.json", dir / "x.db"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mbs=1,gas=1,stage=2"));
  EXPECT_THAT(r.output, HasSubstr("pred. ms/step"));
  EXPECT_THAT(r.output, HasSubstr("pruned by the memory model"));
  EXPECT_THAT(r.output, HasSubstr("mbs=64,gas=1,stage=0: predicted"));
  EXPECT_THAT(r.output, HasSubstr("> budget 1.00 MiB"));
  EXPECT_THAT(r.output, HasSubstr("nothing was run"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db"));
  EXPECT_FALSE(std::filesystem::exists(dir / "tune"));
}

// Activation checkpointing is an axis that saves memory: the dry run keeps it
// only where the candidate would not fit without it, and says why it drops it.
TEST(Cli, DryRunTriesCheckpointingOnlyWhereMemoryIsTheLimit) {
  test::TempDir dir;
  json cfg = test::tiny_config({{"hybrid", {{"model", {{"n_layer", 4}, {"seq_len", 64}}}}}});
  const json space = json::parse(R"({"mbs": [1, 64], "stage": [0], "ckpt": [0, 1]})");
  // The budget: what mbs=64 needs with checkpointing, by the engine's memory model.
  json big = cfg;
  big["train_micro_batch_size_per_gpu"] = 64;
  big["hybrid"]["activation_checkpointing"] = {{"every", 1}};
  auto backend = kernels::make_backend("cpu", 0).backend;
  const uint64_t budget = engine::predict_memory(engine::parse_config(big, 2), 2, *backend).total();
  cfg["hybrid"]["memory_budget"] = budget;
  test::write_json(dir / "cfg.json", cfg);
  test::write_json(dir / "space.json", space);
  const auto r = test::run_command(
      fmt::format("{} --config {} --space {} --nprocs 2 --dry-run --db {}", test::tune_bin(),
                  dir / "cfg.json", dir / "space.json", dir / "x.db"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("hybrid.activation_checkpointing.every saves memory"));
  EXPECT_THAT(r.output, HasSubstr("mbs=64,gas=1,stage=0,ckpt=0: predicted"))
      << "without checkpointing it does not fit";
  EXPECT_THAT(r.output,
              ::testing::ContainsRegex("mbs=1,gas=1,stage=0,ckpt=1 +ckpt=1 saves memory it does "
                                       "not need: with ckpt=0 it is predicted"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("\nmbs=64,gas=1,stage=0,ckpt=1 +[0-9]"))
      << "runnable, with its predictions";
}

TEST(Cli, ProbeUnderMpirunIsStoredAndUsed) {
  test::TempDir dir;
  const std::string db = dir / "x.db";
  auto r = test::run_command(fmt::format(
      "{} probe --nprocs 2 --gemm-size 128 --max-message 65536 --db {}", test::tune_bin(), db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("GFLOP/s per rank"));
  EXPECT_THAT(r.output, HasSubstr("reduce_scatter"));
  {
    profiler::RunStore store(db, profiler::OpenMode::read_only);
    const auto p = store.latest_probe();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->world_size, 2);
    EXPECT_GT(p->gemm_flops_per_s, 0.0);
    // 4 collectives × 3 sizes (4 KiB, 16 KiB, 64 KiB).
    ASSERT_EQ(p->bandwidth.size(), 12u);
    std::set<std::string> ops;
    for (const auto& b : p->bandwidth) ops.insert(b.op);
    EXPECT_EQ(ops,
              (std::set<std::string>{"all_gather", "all_reduce", "all_to_all", "reduce_scatter"}));
    for (const auto& b : p->bandwidth) {
      EXPECT_GT(b.algbw_gbps, 0.0) << b.op << " " << b.bytes;
      // nccl-tests' bus factors for 2 ranks: all-reduce 1, the others 1/2.
      EXPECT_NEAR(b.busbw_gbps / b.algbw_gbps, b.op == "all_reduce" ? 1.0 : 0.5, 1e-9);
    }
  }
  // The dry run now prices candidates with the stored probe.
  test::write_json(dir / "cfg.json", test::tiny_config());
  r = test::run_command(fmt::format("{} --config {} --nprocs 2 --dry-run --db {}", test::tune_bin(),
                                    dir / "cfg.json", db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("latest probe 1"));
}

}  // namespace
}  // namespace hybrid::autotune
