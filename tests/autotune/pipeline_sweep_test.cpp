// A real 4-rank sweep over pipeline layouts (1, 2 and 4 stages of a 4-block
// model × ZeRO 0 and 1 × micro-batches 1 and 2: 12 candidates, so that the
// model strategy, which runs at least 6, has a choice to make): hybrid-tune starts hybrid-train
// trials under mpirun, every layout runs, the store holds each trial with its layout, the written
// best config carries the pipeline block, and the `model` strategy's pick, as
// the grid measured it, is within 5 % of the grid's best or within the
// tuner's noise band of it (its 95 % interval overlaps the best's: the
// tuner's own tie rule, autotune/noise.h), so a loaded 2-core machine cannot
// fail the test by noise alone.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "autotune/noise.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::TrialRow;
using profiler::TrialStatus;

std::map<std::string, TrialRow> trials_by_key(const std::string& db) {
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto sweeps = store.sweeps();
  EXPECT_EQ(sweeps.size(), 1u);
  std::map<std::string, TrialRow> m;
  if (sweeps.empty()) return m;
  for (auto& t : store.trials(sweeps[0].id)) m[t.key] = t;
  return m;
}

std::string best_key(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("best: (\\S+) =")) ? m[1].str() : std::string();
}

TEST(PipelineSweep, FourRanksTryEveryLayoutAndTheModelPicksWithinFivePercentOfTheGrid) {
  test::TempDir dir;
  test::write_json(
      dir / "cfg.json",
      test::tiny_config(
          {{"gradient_accumulation_steps", 4},
           {"hybrid", {{"model", {{"n_layer", 4}, {"n_embd", 64}, {"seq_len", 32}}}}}}));
  test::write_json(dir / "space.json",
                   json::parse(R"({"mbs": [1, 2], "pp": [1, 2, 4], "stage": [0, 1]})"));
  const std::string common = fmt::format(
      "{} --config {} --space {} --nprocs 4 --steps 12 --start-step 5 --no-probe --confirm-rounds "
      "0",
      test::tune_bin(), dir / "cfg.json", dir / "space.json");
  const auto grid =
      test::run_command(fmt::format("{} --strategy grid --early-stop 0 --db {} --out {}", common,
                                    dir / "grid.db", dir / "grid.json"));
  ASSERT_EQ(grid.exit_code, 0) << grid.output;
  const auto t = trials_by_key(dir / "grid.db");
  ASSERT_EQ(t.size(), 12u) << grid.output;
  std::map<int, int> layouts;  // pipeline stages -> trials
  const TrialRow* best = nullptr;
  for (const auto& [key, row] : t) {
    ASSERT_EQ(row.status, TrialStatus::ok) << key << ": " << row.reason;
    const json cfg = json::parse(row.config_json);
    const int pp = cfg.at("pipeline").at("stages").get<int>();
    EXPECT_THAT(key, ::testing::HasSubstr(fmt::format("pp={}", pp)));
    // The triad counts the 4 / pp data-parallel ranks.
    EXPECT_EQ(cfg.at("train_batch_size").get<int>(),
              cfg.at("train_micro_batch_size_per_gpu").get<int>() * 4 * (4 / pp))
        << key;
    ++layouts[pp];
    if (!best || *row.metric > *best->metric) best = &row;
  }
  EXPECT_EQ(layouts, (std::map<int, int>{{1, 4}, {2, 4}, {4, 4}}));
  EXPECT_TRUE(test::read_json(dir / "grid.json").contains("pipeline"));

  const auto model = test::run_command(fmt::format("{} --strategy model --db {} --out {}", common,
                                                   dir / "model.db", dir / "model.json"));
  ASSERT_EQ(model.exit_code, 0) << model.output;
  const std::string pick = best_key(model.output);
  const size_t model_trials = trials_by_key(dir / "model.db").size();
  EXPECT_LE(model_trials, t.size());
  ASSERT_TRUE(t.count(pick)) << "the model's pick '" << pick << "' is no grid trial\n"
                             << model.output;
  const TrialRow& as_grid = t.at(pick);
  const double ratio = *as_grid.metric / *best->metric;
  const auto a = metric_interval(Metric::throughput, as_grid),
             b = metric_interval(Metric::throughput, *best);
  const bool within_noise = a && b && overlap(*a, *b);
  std::printf(
      "grid best %s %.1f samples/s; model's pick %s, as the grid measured it %.1f samples/s "
      "(%.3f of the best%s) after %zu of %zu trials\n",
      best->key.c_str(), *best->metric, pick.c_str(), *as_grid.metric, ratio,
      within_noise ? ", within noise" : "", model_trials, t.size());
  EXPECT_TRUE(ratio >= 0.95 || within_noise)
      << pick << " measured " << format_with_interval(Metric::throughput, as_grid) << " against "
      << best->key << " " << format_with_interval(Metric::throughput, *best);
}

}  // namespace
}  // namespace hybrid::autotune
