#include "profiler/generation_data.h"

#include <fmt/format.h>

#include <cmath>

#include "base/dispersion.h"

namespace hybrid::profiler {

std::optional<LatencyPercentiles> latency_percentiles(std::span<const double> ms) {
  if (ms.empty()) return std::nullopt;
  return LatencyPercentiles{base::quantile(ms, 0.5), base::quantile(ms, 0.9),
                            base::quantile(ms, 0.99)};
}

namespace {

std::string bad_time(const char* name, double v) {
  return std::isfinite(v) && v >= 0 ? std::string()
                                    : fmt::format("{} must be finite and >= 0, got {}", name, v);
}

std::string bad_time(const char* name, const std::optional<double>& v) {
  return v ? bad_time(name, *v) : std::string();
}

// other_ms is what is left of the step (e2e minus the parts): finite, of either sign.
std::string bad_rest(const char* name, const std::optional<double>& v) {
  return !v || std::isfinite(*v) ? std::string()
                                 : fmt::format("{} must be finite, got {}", name, *v);
}

std::string bad_percentiles(const char* name, const std::optional<LatencyPercentiles>& p) {
  if (!p) return "";
  for (const std::string& why :
       {bad_time(name, p->p50), bad_time(name, p->p90), bad_time(name, p->p99)})
    if (!why.empty()) return why;
  if (p->p50 <= p->p90 && p->p90 <= p->p99) return "";
  return fmt::format("{} percentiles must not decrease: p50 {} p90 {} p99 {}", name, p->p50, p->p90,
                     p->p99);
}

std::string bad_counts(const GenerationRow& r) {
  if (r.batch < 1) return fmt::format("batch must be at least 1, got {}", r.batch);
  if (r.prompts < 0) return fmt::format("prompts must be >= 0, got {}", r.prompts);
  if (r.prompt_tokens < 0)
    return fmt::format("prompt_tokens must be >= 0, got {}", r.prompt_tokens);
  if (r.new_tokens < 0) return fmt::format("new_tokens must be >= 0, got {}", r.new_tokens);
  if (r.repetitions < 1)
    return fmt::format("repetitions must be at least 1, got {}", r.repetitions);
  if (r.step && *r.step < 0) return fmt::format("step must be >= 0, got {}", *r.step);
  if (r.kind == GenerationKind::bench && r.test.empty()) return "a bench row needs its test";
  if (r.kind != GenerationKind::bench && !r.test.empty())
    return fmt::format("test '{}' on a {} row (only bench rows have one)", r.test,
                       to_string(r.kind));
  return "";
}

}  // namespace

std::string generation_row_error(const GenerationRow& r) {
  const std::string checks[] = {
      bad_counts(r),
      bad_percentiles("ttft_ms", r.ttft_ms),
      bad_percentiles("tpot_ms", r.tpot_ms),
      bad_time("tokens_per_s", r.tokens_per_s),
      bad_time("tokens_per_s_sd", r.tokens_per_s_sd),
      bad_time("e2e_ms", r.e2e_ms),
      bad_time("gather_ms", r.gather_ms),
      bad_time("generate_ms", r.generate_ms),
      bad_time("train_ms", r.train_ms),
      bad_rest("other_ms", r.other_ms),
      bad_time("samples_per_s", r.samples_per_s),
  };
  for (const std::string& why : checks)
    if (!why.empty()) return why;
  return "";
}

}  // namespace hybrid::profiler
