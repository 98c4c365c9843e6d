#include "autotune/generate_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "autotune/generate_spec_reading.h"
#include "autotune/tune_error.h"
#include "base/units.h"
#include "engine/memory_model.h"
#include "engine/model/registry.h"
#include "kernels/registry.h"

namespace hybrid::autotune {

using nlohmann::json;
using spec::positive_int;
using spec::refuse;
using spec::text_at;
using spec::values_at;

namespace {

kernels::DType dtype_at(const json& v, const std::string& key) {
  static const std::set<std::string> kNames = {"fp32", "bf16", "fp16"};
  if (!v.is_string() || !kNames.count(v.get<std::string>()))
    refuse(key, fmt::format("{} is not one of fp32, bf16, fp16", v.dump()));
  return kernels::parse_dtype(v.get<std::string>());
}

}  // namespace

Metric parse_generate_metric(const json& v) {
  if (v == "tokens_per_s") return Metric::tokens;
  if (v == "latency_p99") return Metric::latency;
  refuse("metric", fmt::format("{} is not tokens_per_s or latency_p99", v.dump()));
}

std::string_view generate_metric_name(Metric m) {
  return m == Metric::latency ? "latency_p99" : "tokens_per_s";
}

GenerateSpec parse_generate_spec(const json& j) {
  if (!j.is_object()) throw TuneError("generate spec: must be a JSON object");
  static const std::set<std::string> kKeys = {"model",       "prompts",       "max_new_tokens",
                                              "dtype",       "metric",        "batch",
                                              "cache_dtype", "memory_budget", "trial_timeout"};
  for (const auto& item : j.items())
    if (!kKeys.count(item.key())) refuse(item.key(), "unknown key");
  GenerateSpec s;
  s.model = text_at(j, "model", "");
  s.prompts = text_at(j, "prompts", "");
  if (s.model.empty() || s.prompts.empty()) refuse("model, prompts", "both are required");
  if (j.contains("max_new_tokens"))
    s.max_new_tokens = positive_int(j["max_new_tokens"], "max_new_tokens");
  if (j.contains("dtype")) s.dtype = kernels::dtype_name(dtype_at(j["dtype"], "dtype"));
  if (j.contains("metric")) s.metric = parse_generate_metric(j["metric"]);
  if (j.contains("memory_budget"))
    s.memory_budget = engine::parse_byte_size(j["memory_budget"], "generate spec: memory_budget");
  if (j.contains("trial_timeout"))
    s.trial_timeout_s = positive_int(j["trial_timeout"], "trial_timeout");
  if (j.contains("batch")) s.batches.clear();
  for (const json& v : values_at(j, "batch")) s.batches.push_back(positive_int(v, "batch"));
  for (const json& v : values_at(j, "cache_dtype"))
    s.cache_dtypes.push_back(dtype_at(v, "cache_dtype"));
  if (s.cache_dtypes.empty()) s.cache_dtypes.push_back(kernels::parse_dtype(s.dtype));
  if (s.metric == Metric::latency && s.max_new_tokens < 2)
    refuse("max_new_tokens", "latency_p99 times decode steps: give at least 2");
  return s;
}

GenerateSpec load_generate_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TuneError(fmt::format("generate spec: cannot read {}", path));
  try {
    return parse_generate_spec(json::parse(in));
  } catch (const json::parse_error& e) {
    throw TuneError(fmt::format("generate spec: {}: {}", path, e.what()));
  }
}

std::string GenerateCandidate::key() const {
  return fmt::format("b{}-{}", batch, kernels::dtype_name(cache_dtype));
}

GenerateTarget generate_target(const GenerateSpec& s) {
  const auto stored = engine::stored_model_in(s.model);
  if (!stored)
    throw TuneError(fmt::format(
        "generate spec: model: {} is neither an llm.c checkpoint nor a Hugging Face directory",
        s.model));
  // The engine hybrid-generate builds: a micro-batch of one at the asked dtype.
  json j = {{"train_micro_batch_size_per_gpu", 1}, {"steps_per_print", 1000000}};
  if (s.dtype != "fp32") j[s.dtype == "bf16" ? "bf16" : "fp16"] = {{"enabled", true}};
  GenerateTarget t{engine::parse_config(j), 0};
  t.config.model = stored->model;
  t.config.model.padded_vocab_size = stored->padded_vocab;
  auto choice = kernels::make_backend("auto", 0);
  t.engine_bytes = engine::predict_memory(t.config, 1, *choice.backend).total();
  return t;
}

namespace {

// The largest call's cache and positions when hybrid-generate runs the prompts
// `batch` at a time, as Generator::open_cache lays them out.
std::pair<uint64_t, uint64_t> largest_call(const GenerateCandidate& c, const GenerateSpec& s,
                                           const engine::ModelConfig& model,
                                           const std::vector<std::vector<int>>& prompts) {
  uint64_t cache = 0, total = 0;
  for (size_t first = 0; first < prompts.size(); first += size_t(c.batch)) {
    const size_t rows = std::min(size_t(c.batch), prompts.size() - first);
    size_t longest = 0;
    for (size_t i = first; i < first + rows; ++i) longest = std::max(longest, prompts[i].size());
    engine::GenerationShape shape;
    shape.rows = int(rows);
    shape.max_tokens = int(longest) + s.max_new_tokens;
    shape.cache_dtype = c.cache_dtype;
    const uint64_t kv = engine::predict_kv_cache(model, shape);
    const uint64_t positions = uint64_t(std::max(longest, rows)) * sizeof(int32_t);
    if (kv + positions > total) std::tie(cache, total) = std::pair{kv, kv + positions};
  }
  return {cache, total};
}

}  // namespace

std::vector<GenerateCandidate> generate_candidates(const GenerateSpec& s, const GenerateTarget& t,
                                                   const std::vector<std::vector<int>>& prompts) {
  std::vector<GenerateCandidate> out;
  std::set<int> batches;
  for (int b : s.batches) batches.insert(std::min(b, int(prompts.size())));
  for (int b : batches)
    for (kernels::DType dt : s.cache_dtypes) {
      GenerateCandidate c;
      c.batch = b;
      c.cache_dtype = dt;
      const auto [cache, call] = largest_call(c, s, t.config.model, prompts);
      c.predicted_cache = cache;
      c.predicted_bytes = t.engine_bytes + call;
      if (b > t.config.seq_len())
        c.pruned = fmt::format("batch {} is past the bound micro-batch's {} tokens", b,
                               t.config.seq_len());
      else if (s.memory_budget && c.predicted_bytes > s.memory_budget)
        c.pruned = fmt::format("predicted {} > memory budget {} (cache {})",
                               base::format_bytes(c.predicted_bytes),
                               base::format_bytes(s.memory_budget), base::format_bytes(cache));
      out.push_back(c);
    }
  return out;
}

}  // namespace hybrid::autotune
