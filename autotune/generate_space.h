// Tuning generation instead of training (`hybrid-tune generate`): a spec file
// names the model, the prompts, the metric (tokens_per_s, higher is better, or
// latency_p99: the 99th percentile of the time per output token, ms, lower is
// better), the memory budget and the values to search: hybrid-generate's
// --batch and --cache-dtype. Each candidate's device memory is predicted before
// anything runs: the engine hybrid-generate builds (the memory model's
// prediction for a micro-batch of one) plus its largest call's key/value cache
// (engine::predict_kv_cache) and positions; a candidate over the budget is
// pruned, never run.
//
//   {"model": "model.bin", "prompts": "prompts.jsonl", "max_new_tokens": 32,
//    "dtype": "fp32", "metric": "tokens_per_s", "memory_budget": "2GB",
//    "batch": [1, 2, 4, 8], "cache_dtype": ["fp32", "bf16"], "trial_timeout": 600}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/metric.h"
#include "engine/config/config.h"
#include "kernels/dtype.h"

namespace hybrid::autotune {

struct GenerateSpec {
  std::string model, prompts;  // paths as given (relative to the working directory)
  int max_new_tokens = 16;
  std::string dtype = "fp32";      // the weights' and activations' (hybrid-generate --dtype)
  Metric metric = Metric::tokens;  // tokens (tokens_per_s) or latency (latency_p99)
  uint64_t memory_budget = 0;      // bytes; 0: none
  std::vector<int> batches = {1};  // hybrid-generate --batch
  std::vector<kernels::DType> cache_dtypes;  // empty: the dtype's
  double trial_timeout_s = 600;
};

// Throws TuneError naming the key at fault: "generate spec: batch: 0 is not a
// positive integer", an unknown key, a metric other than the two.
GenerateSpec parse_generate_spec(const nlohmann::json& j);
GenerateSpec load_generate_spec(const std::string& path);
// "tokens_per_s" | "latency_p99".
std::string_view generate_metric_name(Metric m);
// The spec's "metric": TuneError "generate spec: metric: ..." for any other value.
Metric parse_generate_metric(const nlohmann::json& v);

struct GenerateCandidate {
  int batch = 1;
  kernels::DType cache_dtype = kernels::DType::f32;
  uint64_t predicted_cache = 0;  // the largest call's kv_cache bytes
  uint64_t predicted_bytes = 0;  // the engine's, plus that call's cache and positions
  std::string pruned;            // why it is not run ("" when it is)
  std::string key() const;       // "b4-bf16"
};

// The model and engine hybrid-generate builds for the spec, and what the
// memory model predicts that engine holds on the device before generating.
struct GenerateTarget {
  engine::Config config;
  uint64_t engine_bytes = 0;
};
GenerateTarget generate_target(const GenerateSpec& s);

// Every batch × cache dtype, batch first; a batch past the prompts' count is
// that count (the same run, tried once). The cache is predicted per call
// as hybrid-generate splits the prompts, the largest call counting.
std::vector<GenerateCandidate> generate_candidates(const GenerateSpec& s, const GenerateTarget& t,
                                                   const std::vector<std::vector<int>>& prompts);

}  // namespace hybrid::autotune
