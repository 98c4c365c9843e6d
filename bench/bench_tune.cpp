// The autotuner's strategies side by side on a real sweep: the `model` strategy
// against the exhaustive `grid` (the reference) over the same space, same
// machine, same run. Each sweep is a real hybrid-tune run (trials are
// hybrid-train processes under mpirun); the figures come from the run store.
//
//   build/bench/bench_tune [--config results/examples/gpt2-small-cpu.json]
//                          [--space results/examples/space-cpu.json] [--nprocs 2] [--keep DIR]
//   (run from the repository root after building hybrid-tune and hybrid-train)
//
// Counters: grid_best and model_best (the sweep metric, samples/s for the
// example), model_vs_grid = model_best / grid_best, model_pick_in_grid = the
// grid's own measurement of the config the model chose / grid_best (free of the
// drift between the two sweeps' moments on a shared machine), trial counts and
// their ratio, and each sweep's wall time. Iterations(1): a sweep is minutes.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "bench/suite_main.h"
#include "bench/tool_runs.h"
#include "profiler/store/run_store.h"

namespace {

namespace fs = std::filesystem;
using hybrid::bench::run_logged;
using hybrid::profiler::TrialRow;
using hybrid::profiler::TrialStatus;

struct Options {
  std::string config = "results/examples/gpt2-small-cpu.json";
  std::string space = "results/examples/space-cpu.json";
  int nprocs = 2;
  std::string keep;  // keep the database and logs here
  std::string tune_bin;
} g_opt;

struct SweepFigures {
  std::map<std::string, TrialRow> trials;  // by key
  std::string best_key;
  double best = 0;
  double wall_s = 0;
};

SweepFigures read_sweep(hybrid::profiler::RunStore& store, const std::string& name) {
  SweepFigures f;
  for (const auto& s : store.sweeps()) {
    if (s.name != name) continue;
    for (auto& t : store.trials(s.id)) {
      if (t.status == TrialStatus::ok && t.metric && *t.metric > f.best)
        f.best = *t.metric, f.best_key = t.key;
      f.trials[t.key] = t;
    }
  }
  return f;
}

// The two sweeps, model then grid, each timed; false (and the benchmark
// skipped) when one failed.
bool run_sweeps(benchmark::State& state, const std::string& common, const fs::path& dir,
                const char* const names[2], double wall[2]) {
  const std::string extra[2] = {" --strategy model",
                                " --strategy grid --early-stop 0 --max-trials 100000"};
  for (int k = 0; k < 2; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run_logged(common + extra[k] + " --name " + names[k] + " --out '" +
                                  (dir / (std::string(names[k] + 6) + ".json")).string() + "'",
                              (dir / (std::string(names[k] + 6) + ".log")).string());
    wall[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      state.SkipWithError((std::string(names[k]) + " sweep failed (see its log)").c_str());
      return false;
    }
  }
  return true;
}

void report(benchmark::State& state, const SweepFigures& model, const SweepFigures& grid,
            const std::string& db) {
  const auto in_grid = grid.trials.find(model.best_key);
  const double pick_in_grid = in_grid != grid.trials.end() && in_grid->second.metric
                                  ? *in_grid->second.metric / grid.best
                                  : 0.0;
  state.counters["grid_best"] = grid.best;
  state.counters["model_best"] = model.best;
  state.counters["model_vs_grid"] = grid.best > 0 ? model.best / grid.best : 0.0;
  state.counters["model_pick_in_grid"] = pick_in_grid;
  state.counters["grid_trials"] = double(grid.trials.size());
  state.counters["model_trials"] = double(model.trials.size());
  state.counters["trials_ratio"] =
      grid.trials.empty() ? 0.0 : double(model.trials.size()) / double(grid.trials.size());
  state.counters["grid_wall_s"] = grid.wall_s;
  state.counters["model_wall_s"] = model.wall_s;
  std::printf(
      "\n%-8s %8s %22s %28s %10s\n%-8s %8zu %16.1f samples/s %28s %8.0f s\n%-8s %8zu %16.1f "
      "samples/s %10s (%5.1f %% of grid) %8.0f s\n"
      "model/grid best: %.3f; the model's pick as the grid measured it: %.3f of the grid's best; "
      "trials %.2f of the grid's\n"
      "database: %s\n",
      "strategy", "trials", "best", "best config", "wall", "grid", grid.trials.size(), grid.best,
      grid.best_key.c_str(), grid.wall_s, "model", model.trials.size(), model.best,
      model.best_key.c_str(), pick_in_grid * 100, model.wall_s,
      grid.best > 0 ? model.best / grid.best : 0.0, pick_in_grid,
      grid.trials.empty() ? 0.0 : double(model.trials.size()) / double(grid.trials.size()),
      db.c_str());
}

void BM_model_vs_grid(benchmark::State& state) {
  const fs::path dir = hybrid::bench::working_dir("bench_tune", g_opt.keep);
  const std::string db = (dir / "tune.db").string();
  const std::string common = "'" + g_opt.tune_bin + "' --config '" + g_opt.config + "' --space '" +
                             g_opt.space + "' --nprocs " + std::to_string(g_opt.nprocs) +
                             " --db '" + db + "' --metric throughput";
  for (auto _ : state) {
    // One probe for both sweeps, outside the timed part.
    if (run_logged("'" + g_opt.tune_bin + "' probe --nprocs " + std::to_string(g_opt.nprocs) +
                       " --db '" + db + "'",
                   (dir / "probe.log").string()) != 0) {
      state.SkipWithError("hybrid-tune probe failed (see probe.log)");
      return;
    }
    double wall[2] = {0, 0};
    const char* const names[2] = {"bench/model", "bench/grid"};
    if (!run_sweeps(state, common, dir, names, wall)) return;
    state.SetIterationTime(wall[0] + wall[1]);
    hybrid::profiler::RunStore store(db, hybrid::profiler::OpenMode::read_only);
    SweepFigures model = read_sweep(store, names[0]), grid = read_sweep(store, names[1]);
    model.wall_s = wall[0], grid.wall_s = wall[1];
    report(state, model, grid, db);
  }
  if (g_opt.keep.empty()) fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  g_opt.tune_bin = hybrid::bench::build_tree_tool("autotune/hybrid-tune");
  // Our flags first; the rest goes to Google Benchmark.
  hybrid::bench::SuiteArgs args(argc, argv,
                                {"--config", "--space", "--keep", "--tune-bin", "--nprocs"});
  const std::pair<const char*, std::string*> values[] = {{"--config", &g_opt.config},
                                                         {"--space", &g_opt.space},
                                                         {"--keep", &g_opt.keep},
                                                         {"--tune-bin", &g_opt.tune_bin}};
  for (const auto& [flag, out] : values)
    if (const std::string* v = args.value(flag)) *out = *v;
  if (const std::string* n = args.value("--nprocs")) {
    const std::optional<int> v =
        hybrid::bench::whole_number_flag("bench_tune", "--nprocs", *n, 1, 1024);
    if (!v) return 2;
    g_opt.nprocs = *v;
  }
  benchmark::RegisterBenchmark("BM_model_vs_grid", BM_model_vs_grid)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kSecond);
  return hybrid::bench::run_suite(args.argc(), args.argv());
}
