// Documents as units (issue 30): how fast the document index scans a token
// stream (engine/data/document_index.h: chunks copied out of the stream, one
// tight loop) against the reference, a scan with TokenDataset::at per token
// (a bounds check and a search of the segments each time), on the same 100M
// tokens in the same run; and what planning an epoch and filling one step cost.
//
//   build/bench/bench_documents [--tokens N]   (default 100000000)
//
// The stream: GPT-2's end-of-text 50256 before each document, documents of
// 1..1000 tokens (mean about 500), drawn from a fixed seed.
#include <benchmark/benchmark.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/statistics.h"
#include "bench/suite_main.h"
#include "engine/data/document_index.h"
#include "engine/data/document_loader.h"
#include "engine/data/document_order.h"
#include "engine/data/epoch_plan.h"

namespace {

using namespace hybrid;

constexpr uint32_t kSeparator = 50256;
int64_t g_tokens = 100'000'000;
std::map<std::string, std::vector<double>> g_seconds;

const engine::TokenDataset& stream() {
  static const engine::TokenDataset data = [] {
    std::mt19937_64 gen(1);
    std::vector<uint16_t> tokens(size_t(g_tokens), 0);
    for (size_t i = 0; i < tokens.size();) {
      tokens[i] = uint16_t(kSeparator);
      const size_t length = 1 + gen() % 1000;
      for (size_t k = 1; k < length && i + k < tokens.size(); ++k)
        tokens[i + k] = uint16_t(gen() % 50000);
      i += length;
    }
    return engine::TokenDataset::from_tokens(std::move(tokens), "bench stream");
  }();
  return data;
}

// Times each iteration of `body` into g_seconds[name]; tokens/s over the stream.
template <class Body>
void timed(benchmark::State& state, const std::string& name, Body&& body) {
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    g_seconds[name].push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["Mtokens_per_s"] = double(g_tokens) / 1e6 / base::median(g_seconds[name]);
}

void index_chunks(benchmark::State& state) {
  timed(state, "index",
        [] { benchmark::DoNotOptimize(engine::DocumentIndex(stream(), kSeparator).count()); });
}

void index_at_per_token(benchmark::State& state) {
  timed(state, "at per token", [] {
    const engine::TokenDataset& d = stream();
    std::vector<int64_t> starts = {0};
    for (int64_t i = 1; i < d.size(); ++i)
      if (d.at(i) == kSeparator) starts.push_back(i);
    benchmark::DoNotOptimize(starts.size());
  });
}

void plan_epoch(benchmark::State& state) {
  static const engine::DocumentIndex index(stream(), kSeparator);
  timed(state, "plan epoch", [] {
    const auto order = engine::document_order(index.count(), 1234, 0, true);
    benchmark::DoNotOptimize(engine::plan_epoch(index, order, {8, 1024, 0, 0}, 1, 0).units.size());
  });
}

void summary() {
  if (!g_seconds.count("index") || !g_seconds.count("at per token")) return;
  const double ours = base::median(g_seconds["index"]);
  const double reference = base::median(g_seconds["at per token"]);
  std::printf("\nsummary (medians), %lld tokens, %lld documents:\n", (long long)g_tokens,
              (long long)engine::DocumentIndex(stream(), kSeparator).count());
  std::printf(
      "document index: %.1f ms (%.0f Mtokens/s); TokenDataset::at per token: %.1f ms: "
      "%.1fx\n",
      ours * 1e3, double(g_tokens) / 1e6 / ours, reference * 1e3, reference / ours);
  if (g_seconds.count("plan epoch"))
    std::printf("one epoch's plan (shuffle, units, packing 8 x 1024): %.1f ms\n",
                base::median(g_seconds["plan epoch"]) * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  bench::SuiteArgs args(argc, argv, {"--tokens"});
  if (const std::string* t = args.value("--tokens")) {
    const auto n = bench::whole_number_flag("bench_documents", "--tokens", *t, 1000, INT_MAX);
    if (!n) return 1;
    g_tokens = *n;
  }
  stream();  // generated before any timing
  for (auto [name, fn] : {std::pair{"documents/index", &index_chunks},
                          std::pair{"documents/index_at_per_token", &index_at_per_token},
                          std::pair{"documents/plan_epoch", &plan_epoch}})
    benchmark::RegisterBenchmark(name, fn)
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return bench::run_suite(args.argc(), args.argv(), summary);
}
