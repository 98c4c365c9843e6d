// Step time per ZeRO stage, and how much of the communication overlap_comm
// hides behind backward compute, on real MPI ranks:
//
//   source scripts/mpi-env.sh && mpirun -np 4 build/bench/bench_zero
//
// Each benchmark is one (stage, overlap_comm) pair training a small GPT-2 for a
// fixed number of steps (fixed, so every rank runs the same collectives).
// Counters: median step time, communication per step (union of collectives in
// flight), exposed communication (the compute thread waited), and the hidden
// fraction 1 − exposed/comm. Only rank 0 reports.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "base/statistics.h"
#include "bench/suite_main.h"
#include "engine/engine.h"

namespace {

using namespace hybrid;

struct Figures {
  double step_ms = 0, comm_ms = 0, exposed_ms = 0;
};
std::map<std::pair<int, bool>, Figures> g_figures;

void BM_zero_step(benchmark::State& state) {
  const int stage = int(state.range(0));
  const bool overlap = state.range(1) != 0;
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 2},
                      {"gradient_accumulation_steps", 1},
                      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}}}}},
                      {"zero_optimization",
                       {{"stage", stage},
                        {"overlap_comm", overlap},
                        {"reduce_bucket_size", 200000},
                        {"allgather_bucket_size", 400000},
                        {"stage3_prefetch_bucket_size", 200000},
                        {"stage3_param_persistence_threshold", 10000}}},
                      {"hybrid",
                       {{"model",
                         {{"type", "gpt2"},
                          {"n_layer", 4},
                          {"n_embd", 192},
                          {"n_head", 4},
                          {"vocab_size", 2048},
                          {"seq_len", 128}}},
                        {"data", "synthetic"},
                        {"threads", 1}}}};
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const auto cfg = engine::parse_config(j, world);
  EngineOptions opts;
  opts.quiet = true;
  auto e = initialize(cfg, make_model(cfg), std::move(opts));
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * size_t(cfg.seq_len());
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t((i * 31 + size_t(e->rank()) * 7) % 2048);
  auto step = [&] {
    e->forward(in, tgt);
    e->backward();
    e->step();
  };
  step();  // warm-up
  std::vector<double> ms;
  double comm = 0, exposed = 0;
  for (auto _ : state) {
    const int32_t id = int32_t(e->global_step() + 1);
    const auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const auto t = e->comm_tracer().step_totals(id);
    comm += double(t.comm_ns) / 1e6;
    exposed += double(t.exposed_ns) / 1e6;
  }
  const double steps = double(ms.size());
  Figures f{base::median(ms), comm / steps, exposed / steps};
  g_figures[{stage, overlap}] = f;
  state.counters["step_ms"] = f.step_ms;
  state.counters["comm_ms"] = f.comm_ms;
  state.counters["exposed_ms"] = f.exposed_ms;
  state.counters["hidden"] = f.comm_ms > 0 ? 1.0 - f.exposed_ms / f.comm_ms : 0.0;
}
BENCHMARK(BM_zero_step)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}})
    ->ArgNames({"stage", "overlap"})
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void print_table() {
  std::printf(
      "\nstage  step (overlap off)  step (overlap on)  comm/step  exposed off  exposed on  "
      "hidden off  hidden on\n");
  for (int s = 0; s < 4; ++s) {
    if (!g_figures.count({s, false}) || !g_figures.count({s, true})) continue;
    const auto& a = g_figures[{s, false}];
    const auto& b = g_figures[{s, true}];
    std::printf("%5d  %14.1f ms  %14.1f ms  %6.1f ms  %8.1f ms  %7.1f ms  %9.0f%%  %8.0f%%\n", s,
                a.step_ms, b.step_ms, b.comm_ms, a.exposed_ms, b.exposed_ms,
                a.comm_ms > 0 ? 100 * (1 - a.exposed_ms / a.comm_ms) : 0.0,
                b.comm_ms > 0 ? 100 * (1 - b.exposed_ms / b.comm_ms) : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // MPI belongs to this program; the engines' communicators borrow it.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Ranks other than 0 run every benchmark but print nothing.
  hybrid::bench::SuiteSteps steps;
  if (rank == 0)
    steps.summary = print_table;
  else
    steps.report = false;
  const int rc = hybrid::bench::run_suite(argc, argv, steps);
  MPI_Finalize();
  return rc;
}
