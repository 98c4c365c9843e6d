// The column table of a generation row (profiler/generation_data.h; what
// follows from it: profiler/columns.h). Its id and run are bound by the store.
#pragma once

#include <tuple>

#include "profiler/columns.h"
#include "profiler/generation_data.h"

namespace hybrid::profiler::columns {

// A percentile group is NULL throughout when the row has none.
template <>
struct Table<GenerationRow> {
  using G = GenerationRow;
  using P = LatencyPercentiles;
  static constexpr const char* name = "generations";
  static constexpr auto columns = std::tuple{
      member("kind", &G::kind),
      member("test", &G::test),
      member("model", &G::model),
      member("dtype", &G::dtype),
      member("batch", &G::batch),
      member("prompts", &G::prompts),
      member("prompt_tokens", &G::prompt_tokens),
      member("new_tokens", &G::new_tokens),
      member("repetitions", &G::repetitions),
      in_optional("ttft_p50_ms", &G::ttft_ms, &P::p50, /*opens=*/true),
      in_optional("ttft_p90_ms", &G::ttft_ms, &P::p90),
      in_optional("ttft_p99_ms", &G::ttft_ms, &P::p99),
      in_optional("tpot_p50_ms", &G::tpot_ms, &P::p50, /*opens=*/true),
      in_optional("tpot_p90_ms", &G::tpot_ms, &P::p90),
      in_optional("tpot_p99_ms", &G::tpot_ms, &P::p99),
      member("tokens_per_s", &G::tokens_per_s),
      member("tokens_per_s_sd", &G::tokens_per_s_sd),
      member("e2e_ms", &G::e2e_ms),
      member("gather_ms", &G::gather_ms),
      member("generate_ms", &G::generate_ms),
      member("train_ms", &G::train_ms),
      member("other_ms", &G::other_ms),
      member("samples_per_s", &G::samples_per_s),
      member("step", &G::step),
  };
};

}  // namespace hybrid::profiler::columns
