// hybrid-generate --bench: llama-bench's two measurements through
// Engine::generate. pp N is the prefill of an N-token prompt: N tokens over the
// time to the prompt's first token (GenerationResult::ttft_ms, the last
// prompt's with a batch, as prompts are prefilled one after another); tg N is
// N decode steps after a one-token prompt: the batch's N tokens per row over
// the steps' time (tpot_ms). One warm-up run first (llama-bench's too), then
// the repetitions; the table gives their mean ± sample standard deviation.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "base/statistics.h"
#include "engine/tools/hybrid_generate.h"
#include "profiler/report_format.h"

namespace hybrid::generate_tool {

namespace {

constexpr int kLlamaBenchPp = 512, kLlamaBenchTg = 128;

// The explicit sizes of one kind, or the default made to fit; each must fit
// `most` (a larger one is refused naming `option`), 0 is skipped.
std::vector<int> sizes(const std::vector<int>& given, int fallback, int most, const char* option,
                       const char* why) {
  if (given.empty())
    return most >= 1 ? std::vector<int>{std::min(fallback, most)} : std::vector<int>{};
  std::vector<int> out;
  for (int n : given) {
    if (n < 0) throw std::invalid_argument(fmt::format("{} {}: must be at least 0", option, n));
    if (n > most)
      throw std::invalid_argument(
          fmt::format("{} {}: past the model's block size ({} at most: {})", option, n, most, why));
    if (n > 0) out.push_back(n);
  }
  return out;
}

double sample_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = base::mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

// `rows` prompts of `tokens` ids drawn uniformly from the vocabulary.
std::vector<std::vector<int>> synthetic_prompts(std::mt19937_64& rng, int rows, int tokens,
                                                int vocab) {
  std::uniform_int_distribution<int> id(0, vocab - 1);
  std::vector<std::vector<int>> prompts(static_cast<size_t>(rows),
                                        std::vector<int>(static_cast<size_t>(tokens)));
  for (auto& p : prompts)
    for (int& t : p) t = id(rng);
  return prompts;
}

// One repetition's tokens/s, from its timings.
double rate_of(const BenchTest& t, const engine::GenerationResult& r, int rows) {
  if (t.decode_tokens == 0) return double(rows) * t.prompt_tokens / (r.ttft_ms.back() / 1e3);
  double ms = 0;
  for (double step : r.tpot_ms) ms += step;
  return double(rows) * double(r.tpot_ms.size()) / (ms / 1e3);
}

BenchResult measure(Engine& e, const Options& o, const BenchTest& t, std::mt19937_64& rng,
                    profiler::GenerationRow row) {
  const int rows = std::max(o.batch, 1), vocab = e.config().model.vocab_size;
  engine::GenerationParams p;
  p.max_new_tokens = t.decode_tokens + 1;  // the first comes from the prefill
  p.sampling = o.gen.sampling;
  BenchResult out{t, {}, {}};
  std::vector<double> ttft, tpot;
  for (int rep = -1; rep < o.repetitions; ++rep) {  // -1: the warm-up
    const auto r = e.generate(synthetic_prompts(rng, rows, t.prompt_tokens, vocab), p);
    if (rep < 0) continue;
    out.tokens_per_s.push_back(rate_of(t, r, rows));
    ttft.insert(ttft.end(), r.ttft_ms.begin(), r.ttft_ms.end());
    tpot.insert(tpot.end(), r.tpot_ms.begin(), r.tpot_ms.end());
    row.new_tokens = r.new_tokens();
  }
  row.test = t.name;
  row.batch = rows;
  row.prompts = rows;
  row.prompt_tokens = int64_t(rows) * t.prompt_tokens;
  row.repetitions = o.repetitions;
  row.ttft_ms = profiler::latency_percentiles(ttft);
  row.tpot_ms = profiler::latency_percentiles(tpot);
  row.tokens_per_s = base::mean(out.tokens_per_s);
  row.tokens_per_s_sd = sample_sd(out.tokens_per_s);
  out.row = std::move(row);
  return out;
}

}  // namespace

std::vector<BenchTest> bench_tests(const Options& o, int block_size) {
  std::vector<BenchTest> tests;
  // pp N needs N + 1 positions (its first new token), tg N one more (the prompt).
  for (int n : sizes(o.bench_pp, kLlamaBenchPp, block_size - 1, "--bench-pp",
                     "the prompt and its first new token"))
    tests.push_back({fmt::format("pp{}", n), n, 0});
  for (int n : sizes(o.bench_tg, kLlamaBenchTg, block_size - 2, "--bench-tg",
                     "a one-token prompt, its first new token and the decoded ones"))
    tests.push_back({fmt::format("tg{}", n), 1, n});
  if (tests.empty()) throw std::invalid_argument("--bench: no test left to run (every size is 0)");
  return tests;
}

std::vector<BenchResult> run_bench(Engine& e, const Options& o, const std::vector<BenchTest>& tests,
                                   const std::string& model) {
  std::mt19937_64 rng(o.gen.sampling.seed);
  profiler::GenerationRow row;
  row.kind = profiler::GenerationKind::bench;
  row.model = model;
  row.dtype = o.dtype;
  std::vector<BenchResult> out;
  for (const BenchTest& t : tests) out.push_back(measure(e, o, t, rng, row));
  return out;
}

std::string bench_table(const std::vector<BenchResult>& results, const std::string& backend,
                        int threads) {
  profiler::report::TextTable table(
      {"model", "dtype", "backend", "threads", "batch", "test", "t/s"}, 3);
  for (const auto& r : results)
    table.add_row({r.row.model, r.row.dtype, backend, std::to_string(threads),
                   std::to_string(r.row.batch), r.test.name,
                   fmt::format("{:.2f} ± {:.2f}", r.row.tokens_per_s, *r.row.tokens_per_s_sd)});
  return table.render();
}

nlohmann::json bench_json(const std::vector<BenchResult>& results) {
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& r : results) {
    const auto percentiles = [](const std::optional<profiler::LatencyPercentiles>& p) {
      return p ? nlohmann::json{{"p50", p->p50}, {"p90", p->p90}, {"p99", p->p99}}
               : nlohmann::json(nullptr);
    };
    tests.push_back(
        {{"test", r.test.name},
         {"n_prompt", r.test.prompt_tokens},
         {"n_gen", r.test.decode_tokens},
         {"batch", r.row.batch},
         {"repetitions", r.row.repetitions},
         {"tokens_per_s", {{"mean", r.row.tokens_per_s}, {"sd", *r.row.tokens_per_s_sd}}},
         {"samples_tokens_per_s", r.tokens_per_s},
         {"ttft_ms", percentiles(r.row.ttft_ms)},
         {"tpot_ms", percentiles(r.row.tpot_ms)}});
  }
  return tests;
}

}  // namespace hybrid::generate_tool
