// The pipeline's bubble against 1F1B's closed form (p−1)/(m+p−1): hybrid-train
// under mpirun with p stages of equal blocks (uniform partition, a small head)
// and m = 8 micro-batches; each stage's share of each step's schedule spent
// waiting on transfers (its bubble plus the transfers themselves), median
// over the steps, averaged over the stages (one stage slower than another
// moves idle time between them; the formula assumes equal stages).
//
//   source scripts/mpi-env.sh && build/bench/bench_pipeline [--stages 2,4] [--micro 8]
//
// Counters per stage count: waiting_fraction, closed_form, ratio (measured /
// closed form), oversubscription (ranks per core: above 1 the stages share
// cores, which inflates the steady state and the bubble no longer follows the
// formula). Iterations(1): each is a few training runs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/text.h"
#include "bench/suite_main.h"
#include "bench/tool_runs.h"
#include "engine/parallel/pipeline_schedule.h"

namespace {

namespace fs = std::filesystem;

struct Options {
  std::vector<int> stages = {2, 4};
  int micro = 8;
  std::string train_bin;
} g_opt;

nlohmann::json config(int stages) {
  return {{"train_micro_batch_size_per_gpu", 4},
          {"gradient_accumulation_steps", g_opt.micro},
          {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-3}}}}},
          {"steps_per_print", 1000},
          {"pipeline", {{"stages", stages}, {"partition", "uniform"}}},
          {"hybrid",
           {{"model",
             {{"type", "gpt2"},
              {"n_layer", 8},
              {"n_embd", 192},
              {"n_head", 4},
              {"vocab_size", 128},
              {"seq_len", 128}}},
            {"data", "synthetic"},
            {"seed", 7},
            {"threads", 1}}}};
}

void BM_PipelineBubble(benchmark::State& state) {
  const int p = int(state.range(0));
  const fs::path dir = hybrid::bench::working_dir("bench_pipeline", "");
  const std::string cfg = (dir / "config.json").string(), res = (dir / "result.json").string();
  std::ofstream(cfg) << config(p).dump(2);
  for (auto _ : state) {
    const std::string cmd = "mpirun --mca mpi_yield_when_idle 1 -np " + std::to_string(p) + " '" +
                            g_opt.train_bin + "' --quiet --steps 6 --config '" + cfg +
                            "' --result '" + res + "'";
    if (hybrid::bench::run_logged(cmd, (dir / "log").string()) != 0) {
      state.SkipWithError(
          ("hybrid-train failed (its log: " + (dir / "log").string() + ")").c_str());
      return;
    }
  }
  std::ifstream in(res);
  const auto r = nlohmann::json::parse(in);
  const auto by_rank = r.at("pipeline").at("waiting_fraction_by_rank").get<std::vector<double>>();
  double measured = 0.0;
  for (double f : by_rank) measured += f / double(by_rank.size());
  state.counters["first_stage"] = by_rank.front();
  state.counters["last_stage"] = by_rank.back();
  const double closed = hybrid::engine::bubble_fraction(p, g_opt.micro);
  const double cores = double(std::max(1u, std::thread::hardware_concurrency()));
  state.counters["waiting_fraction"] = measured;
  state.counters["closed_form"] = closed;
  state.counters["ratio"] = measured / closed;
  state.counters["oversubscription"] = double(p) / cores;
  state.counters["ms_per_step"] = r.at("ms_per_step_median").get<double>();
  std::printf(
      "%d stages, m = %d: a stage waits %.1f %% of the schedule (first %.1f %%, last %.1f %%); "
      "1F1B's closed form (p-1)/(m+p-1) = %.1f %%; ratio %.2f (%.1f ranks per core)\n",
      p, g_opt.micro, 100 * measured, 100 * by_rank.front(), 100 * by_rank.back(), 100 * closed,
      measured / closed, double(p) / cores);
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  g_opt.train_bin = hybrid::bench::build_tree_tool("engine/hybrid-train");
  hybrid::bench::SuiteArgs args(argc, argv, {"--stages", "--micro"});
  if (const std::string* list = args.value("--stages")) {
    g_opt.stages.clear();
    for (size_t at = 0; at <= list->size();) {
      const size_t comma = std::min(list->find(',', at), list->size());
      if (auto v = hybrid::base::parse_int(list->substr(at, comma - at)))
        g_opt.stages.push_back(int(*v));
      at = comma + 1;
    }
  }
  if (const std::string* micro = args.value("--micro"))
    if (auto v = hybrid::base::parse_int(*micro)) g_opt.micro = int(*v);
  for (int p : g_opt.stages)
    benchmark::RegisterBenchmark("BM_PipelineBubble", BM_PipelineBubble)
        ->Arg(p)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  return hybrid::bench::run_suite(args.argc(), args.argv());
}
