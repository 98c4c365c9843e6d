// Activation checkpointing's price: the training step with every block
// checkpointed (its forward recomputed in backward) against the same step
// without, in one run (issue target: <= 1.4x the step time, i.e. at most one
// extra forward); also with the checkpointed inputs in host memory
// (cpu_checkpointing). The policies' engines live side by side and every
// iteration runs one optimizer step of each, in a rotating order, so a
// machine whose load drifts (a shared CI runner) slows all of them alike.
//
//   build/bench/bench_checkpointing               # GPT-2 L=6 C=384 H=6 V=8192, B=4 T=256, fp32
//   build/bench/bench_checkpointing --gpt2-124M   # also GPT-2 124M, B=4 T=256 (minutes)
//
// Counters per policy: median ms per step, its ratio to the step without
// checkpointing, device activation bytes; the summary printed at the end says
// the same in words.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "base/statistics.h"
#include "base/units.h"
#include "bench/slowdown.h"
#include "engine/engine.h"

namespace {

using namespace hybrid;

struct Model {
  const char* name;
  int L, C, H, V, T, B;
};
constexpr Model kMini{"mini", 6, 384, 6, 8192, 256, 4};
constexpr Model k124M{"gpt2_124M", 12, 768, 12, 50257, 256, 4};

// "off", "every_block", "every_block_cpu" (the kept inputs in host memory).
engine::Config config(const Model& m, const std::string& policy) {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", m.B},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}, {"weight_decay", 0.1}}}}},
      {"hybrid",
       {{"model",
         {{"type", "gpt2"},
          {"n_layer", m.L},
          {"n_embd", m.C},
          {"n_head", m.H},
          {"vocab_size", m.V},
          {"seq_len", m.T}}},
        {"data", "synthetic"}}}};
  if (policy != "off") j["activation_checkpointing"] = nlohmann::json::object();
  if (policy == "every_block_cpu") j["activation_checkpointing"]["cpu_checkpointing"] = true;
  return engine::parse_config(j, 1);
}

struct PolicyRun {
  std::string policy;
  std::unique_ptr<Engine> engine;
  std::vector<double> seconds;
  uint64_t activation_bytes = 0;
};

struct Result {
  std::vector<std::pair<std::string, double>> median_s;  // per policy, in order
  std::map<std::string, uint64_t> activations;
  size_t samples = 0;
};
std::map<std::string, Result> g_results;  // per model

void interleaved(benchmark::State& state, const Model& m, std::vector<std::string> policies) {
  std::vector<PolicyRun> runs;
  for (const auto& p : policies) {
    EngineOptions opts;
    opts.quiet = true;
    const engine::Config cfg = config(m, p);
    runs.push_back({p, initialize(cfg, make_gpt2(cfg), std::move(opts)), {}, 0});
  }
  const size_t n = size_t(m.B) * size_t(m.T);
  std::mt19937 rng(1);
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t(rng() % uint32_t(m.V));
  auto step = [&](Engine& e) {
    e.forward(in, tgt);
    e.backward();
    e.step();
  };
  for (auto& r : runs) step(*r.engine);  // warm-up: first touches of every buffer
  size_t round = 0;
  const std::string name = std::string("checkpointing/") + m.name;
  for (auto _ : hybrid::bench::slowed(state, name)) {
    for (size_t k = 0; k < runs.size(); ++k) {
      PolicyRun& r = runs[(round + k) % runs.size()];
      const auto t0 = std::chrono::steady_clock::now();
      step(*r.engine);
      r.seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    ++round;
  }
  Result& res = g_results[m.name];
  const double off = base::median(runs.front().seconds);
  for (auto& r : runs) {
    const double s = base::median(r.seconds);
    const uint64_t act =
        r.engine->allocator().stats().peak[size_t(engine::MemCategory::activations)];
    res.median_s.emplace_back(r.policy, s);
    res.activations[r.policy] = act;
    res.samples = r.seconds.size();
    state.counters[r.policy + "_ms"] = 1e3 * s;
    state.counters[r.policy + "_ratio"] = s / off;
    state.counters[r.policy + "_activation_bytes"] = double(act);
  }
}

void summary() {
  std::printf("\nsummary (medians of interleaved steps, measured side by side in this run):\n");
  for (const auto& [model, res] : g_results) {
    const double off = res.median_s.front().second;
    for (const auto& [policy, s] : res.median_s)
      std::printf(
          "  %-10s %-16s %9.1f ms/step (median of %zu)  %.3fx the step without  "
          "activations %s\n",
          model.c_str(), policy.c_str(), 1e3 * s, res.samples, s / off,
          base::format_bytes(res.activations.at(policy)).c_str());
    for (const auto& [policy, s] : res.median_s)
      if (policy == "every_block")
        std::printf("%s: checkpointing every block costs %.3fx the step time (target <= 1.4x)\n",
                    model.c_str(), s / off);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --gpt2-124M (ours, taken out before Google Benchmark reads the rest) adds the big model.
  bool big = false;
  int out = 1;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--gpt2-124M")
      big = true;
    else
      argv[out++] = argv[i];
  argc = out;
  benchmark::RegisterBenchmark("checkpointing/mini",
                               [](benchmark::State& s) {
                                 interleaved(s, kMini, {"off", "every_block", "every_block_cpu"});
                               })
      ->Iterations(7)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  if (big)  // two engines of 124M: about 6 GiB
    benchmark::RegisterBenchmark("checkpointing/gpt2_124M",
                                 [](benchmark::State& s) {
                                   interleaved(s, k124M, {"off", "every_block"});
                                 })
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  summary();
  return 0;
}
