// The generation runs of a store (hybrid-generate, its --bench, hybrid-train's
// rollout steps): one line per stored generation row with its run, what ran
// (kind, test, model, dtype, batch, prompts, tokens), the time to first token
// and per output token (p50, p90, p99) and tokens/s (± the repetitions' sd for
// a bench); the rollout breakdown (step, e2e, gather, generate, train, other,
// samples/s) as a second table when any row has it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "profiler/generation_data.h"
#include "profiler/profile_data.h"

namespace hybrid::profiler {

// `runs`: the store's runs (their names and statuses); rows of a run not in it
// show without a name.
std::string generation_report(const std::vector<RunInfo>& runs,
                              const std::vector<GenerationRow>& rows);

// {"generations": [{"id", "run_id", "run_name", "kind", "test", "model", "dtype",
//  "batch", "prompts", "prompt_tokens", "new_tokens", "repetitions",
//  "ttft_ms": {p50, p90, p99} | null, "tpot_ms": ..., "tokens_per_s",
//  "tokens_per_s_sd", "e2e_ms", "gather_ms", "generate_ms", "train_ms",
//  "other_ms", "samples_per_s", "step" (null where absent)}]}
nlohmann::json generation_report_json(const std::vector<RunInfo>& runs,
                                      const std::vector<GenerationRow>& rows);

}  // namespace hybrid::profiler
