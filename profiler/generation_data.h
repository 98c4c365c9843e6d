// Generation runs in the run store (docs/schema.md, table `generations`): one
// row per measured generation, the child of a run. hybrid-generate writes a
// `generate` row (one call over the prompts) or one `bench` row per test (pp N,
// tg N, llama-bench's names); hybrid-train's rollout loop writes a `rollout`
// row per step, with the step's breakdown. Latencies are ms, rates per second.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hybrid::profiler {

enum class GenerationKind : uint8_t { generate, bench, rollout };

std::string_view to_string(GenerationKind k);
// Throws std::invalid_argument naming the value when it is not one of the above.
GenerationKind parse_generation_kind(std::string_view s);

// The 50th, 90th and 99th percentiles of a sample (base::quantile: linear
// interpolation, NumPy's default).
struct LatencyPercentiles {
  double p50 = 0, p90 = 0, p99 = 0;
  bool operator==(const LatencyPercentiles&) const = default;
};
// nullopt for an empty sample (a generation of one token has no decode step).
std::optional<LatencyPercentiles> latency_percentiles(std::span<const double> ms);

struct GenerationRow {
  int64_t id = 0;      // store
  int64_t run_id = 0;  // store: the run it belongs to (add_generation's argument)
  GenerationKind kind = GenerationKind::generate;
  std::string test;   // bench: "pp512", "tg128"; otherwise empty
  std::string model;  // e.g. "gpt2 124.44 M"
  std::string dtype;  // "fp32" | "bf16" | "fp16"
  int batch = 1;      // rows decoded together
  int prompts = 0;
  int64_t prompt_tokens = 0;                  // over every prompt
  int64_t new_tokens = 0;                     // generated, over every prompt (and repetition)
  int repetitions = 1;                        // bench: measured runs (the warm-up is not one)
  std::optional<LatencyPercentiles> ttft_ms;  // time to each prompt's first token
  std::optional<LatencyPercentiles> tpot_ms;  // time of each decode step (a token per row)
  double tokens_per_s = 0;                    // bench: the mean over repetitions
  std::optional<double> tokens_per_s_sd;      // bench: their sample standard deviation
  // rollout: one step of generate-then-train (hybrid-train), as it split;
  // other_ms (the rest of e2e) may be slightly negative from rounding.
  std::optional<double> e2e_ms, gather_ms, generate_ms, train_ms, other_ms;
  std::optional<double> samples_per_s;
  std::optional<int64_t> step;
  bool operator==(const GenerationRow&) const = default;
};

// Why `row` cannot be stored ("" when it can), naming the field and its value:
// batch below 1, a negative count, repetitions below 1, a rate or a time that
// is negative or not finite, percentiles out of order, a bench row without a
// test or a test on another kind.
std::string generation_row_error(const GenerationRow& row);

}  // namespace hybrid::profiler
