// What full profiling costs: the same training step with the tracer off and on
// (module events with FLOPs, comm tracing, NVTX/CUPTI hooks when present),
// alternated step by step in one process so machine noise hits both alike.
// Target: <= 3 % of step time. Prints both medians and the ratio.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/statistics.h"
#include "bench/suite_main.h"
#include "engine/engine.h"

namespace {

using namespace hybrid;

std::vector<double> g_off, g_on;

void BM_profiling_overhead(benchmark::State& state) {
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 4},
                      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}}}}},
                      {"hybrid",
                       {{"model",
                         {{"type", "gpt2"},
                          {"n_layer", 4},
                          {"n_embd", 256},
                          {"n_head", 4},
                          {"vocab_size", 4096},
                          {"seq_len", 128}}},
                        {"data", "synthetic"}}}};
  const auto cfg = engine::parse_config(j, 1);
  EngineOptions opts;
  opts.quiet = true;
  auto e = initialize(cfg, make_model(cfg), std::move(opts));
  const size_t n = 4 * 128;
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t(i * 17 % 4096);
  auto timed_step = [&](bool profile) {
    e->tracer().set_enabled(profile);
    const auto t0 = std::chrono::steady_clock::now();
    e->forward(in, tgt);
    e->backward();
    e->step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    e->tracer().set_enabled(false);
    (void)e->tracer().drain();  // as the recorder does at the end of a window
    return s;
  };
  timed_step(false);
  timed_step(true);
  size_t k = 0;
  for (auto _ : state) {
    // Alternate which goes first, so neither always follows the other.
    const bool on_first = (k++ % 2) == 1;
    const double a = timed_step(on_first), b = timed_step(!on_first);
    (on_first ? g_on : g_off).push_back(a);
    (on_first ? g_off : g_on).push_back(b);
  }
  const double off = base::median(g_off), on = base::median(g_on);
  state.counters["step_ms_off"] = off * 1e3;
  state.counters["step_ms_on"] = on * 1e3;
  state.counters["overhead_pct"] = 100.0 * (on / off - 1.0);
}
BENCHMARK(BM_profiling_overhead)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  return hybrid::bench::run_suite(argc, argv, [] {
    const double off = base::median(g_off), on = base::median(g_on);
    if (off > 0)
      std::printf(
          "\nprofiling off: %.2f ms/step, full profiling: %.2f ms/step (medians of %zu steps "
          "each): overhead %+.2f %% (target <= 3 %%)\n",
          off * 1e3, on * 1e3, g_off.size(), 100.0 * (on / off - 1.0));
  });
}
