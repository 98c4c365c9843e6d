// Shared by the 4-rank layout sweeps (pipeline_sweep_test, tensor_sweep_test):
// reading a sweep's trials, and the check that the `model` strategy's pick is
// within 5 % of the grid's measured best or within the tuner's noise band of
// it (its 95 % interval overlaps the best's: the tuner's own tie rule,
// autotune/noise.h). The pick's speed is the faster of its two measurements
// (the grid's and the model sweep's): load only slows a trial, so one slowed
// measurement cannot fail the test. When they are apart by more than that,
// both configs run again in interleaved rounds, as the tuner confirms a winner
// (autotune/tie_break.h), and the pick's fastest run must be within 5 % of the
// grid best's.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "autotune/best_config.h"
#include "autotune/noise.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune::test {

// The 4-rank sweep of DIR/cfg.json over DIR/space.json both layout tests run,
// without its strategy, store and output.
inline std::string layout_sweep_command(const std::string& dir) {
  return fmt::format(
      "{} --config {}/cfg.json --space {}/space.json --nprocs 4 --steps 12 --start-step 5 "
      "--no-probe --confirm-rounds 0",
      tune_bin(), dir, dir);
}

inline std::map<std::string, profiler::TrialRow> trials_by_key(const std::string& db) {
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto sweeps = store.sweeps();
  EXPECT_EQ(sweeps.size(), 1u);
  std::map<std::string, profiler::TrialRow> m;
  if (sweeps.empty()) return m;
  for (auto& t : store.trials(sweeps[0].id)) m[t.key] = t;
  return m;
}

// The tuner's confirmation, by hand: the configs run again in interleaved
// rounds (order rotated each round, as autotune/tie_break.h does); each one's
// fastest run (load only slows a run down) in samples/s.
inline std::vector<double> confirm(const TempDir& dir, const std::vector<std::string>& configs,
                                   int ranks, int rounds) {
  std::vector<double> fastest(configs.size(), 0.0);
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < configs.size(); ++k) {
      const size_t c = (k + size_t(r)) % configs.size();
      const std::string res = dir / fmt::format("confirm{}_{}.json", r, c);
      const auto run =
          run_command(fmt::format("{} -np {} {} --config {} --steps 12 --quiet --result {}",
                                  HYBRID_MPIEXEC, ranks, train_bin(), configs[c], res));
      EXPECT_EQ(run.exit_code, 0) << run.output;
      if (run.exit_code == 0)
        fastest[c] = std::max(fastest[c], read_json(res).at("samples_per_s").get<double>());
    }
  return fastest;
}

inline std::string best_key(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("best: (\\S+) =")) ? m[1].str() : std::string();
}

// grid: the grid sweep's trials; model_db, model_output: the model sweep's.
inline void expect_model_pick_near_grid_best(const TempDir& dir,
                                             const std::map<std::string, profiler::TrialRow>& grid,
                                             const std::string& model_db,
                                             const std::string& model_output, int ranks) {
  const profiler::TrialRow* best = nullptr;
  for (const auto& [key, row] : grid)
    if (row.metric && (!best || *row.metric > *best->metric)) best = &row;
  ASSERT_NE(best, nullptr);
  const std::string pick = best_key(model_output);
  const auto mt = trials_by_key(model_db);
  EXPECT_LE(mt.size(), grid.size());
  ASSERT_TRUE(grid.count(pick) && mt.count(pick))
      << "the model's pick '" << pick << "' is no trial of both sweeps\n"
      << model_output;
  const auto& g = grid.at(pick);
  const auto& m = mt.at(pick);
  ASSERT_TRUE(g.metric && m.metric) << pick;
  const profiler::TrialRow& pick_row = *g.metric >= *m.metric ? g : m;
  const double ratio = *pick_row.metric / *best->metric;
  const auto a = metric_interval(Metric::throughput, pick_row),
             b = metric_interval(Metric::throughput, *best);
  const bool within_noise = a && b && overlap(*a, *b);
  std::printf(
      "grid best %s %.1f samples/s; model's pick %s %.1f samples/s (grid %.1f, model sweep %.1f; "
      "%.3f of the best%s) after %zu of %zu trials\n",
      best->key.c_str(), *best->metric, pick.c_str(), *pick_row.metric, *g.metric, *m.metric, ratio,
      within_noise ? ", within noise" : "", mt.size(), grid.size());
  const std::string figures = pick + " " + format_with_interval(Metric::throughput, pick_row) +
                              " against " + best->key + " " +
                              format_with_interval(Metric::throughput, *best);
  if (ratio >= 0.95 || within_noise) return;
  // Apart by more than the noise band: the load may have changed between the
  // sweeps (intervals see only the noise within a trial). Both configs again,
  // interleaved, as the tuner confirms a winner; the 5 % must hold there.
  write_json(dir / "pick.json",
             best_config_json(nlohmann::json::parse(pick_row.config_json), ranks));
  write_json(dir / "best.json", best_config_json(nlohmann::json::parse(best->config_json), ranks));
  const auto again = confirm(dir, {dir / "pick.json", dir / "best.json"}, ranks, 3);
  std::printf("confirmation (fastest of 3 interleaved runs): %s %.1f, %s %.1f samples/s\n",
              pick.c_str(), again[0], best->key.c_str(), again[1]);
  EXPECT_GE(again[0], 0.95 * again[1]) << figures;
}

}  // namespace hybrid::autotune::test
