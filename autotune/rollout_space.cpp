#include "autotune/rollout_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "autotune/candidate.h"
#include "autotune/generate_space.h"
#include "autotune/generate_spec_reading.h"
#include "autotune/tune_error.h"
#include "base/units.h"
#include "engine/inference_replica.h"
#include "engine/memory_model.h"
#include "kernels/registry.h"

namespace hybrid::autotune {

using nlohmann::json;
using spec::positive_int;
using spec::refuse;
using spec::text_at;
using spec::values_at;

namespace {

json read_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) refuse("config", fmt::format("cannot read {}", path));
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    refuse("config", fmt::format("{} is not a JSON object", path));
  return j;
}

// The base config's hybrid.rollout block (an empty object when it has none).
json base_rollout(const json& base) {
  const json none = json::object();
  if (!base.contains("hybrid") || !base["hybrid"].is_object()) return none;
  const json& h = base["hybrid"];
  return h.contains("rollout") && h["rollout"].is_object() ? h["rollout"] : none;
}

void parse_axes(const json& j, RolloutSpec& s) {
  if (j.contains("batch")) s.batches.clear();
  for (const json& v : values_at(j, "batch")) s.batches.push_back(positive_int(v, "batch"));
  if (j.contains("cache_dtype")) s.cache_dtypes.clear();
  for (const json& v : values_at(j, "cache_dtype")) {
    if (!v.is_string() || !std::set<std::string>{"fp32", "bf16", "fp16"}.count(v))
      refuse("cache_dtype", fmt::format("{} is not one of fp32, bf16, fp16", v.dump()));
    s.cache_dtypes.push_back(kernels::parse_dtype(v.get<std::string>()));
  }
  if (j.contains("inference_tp_size")) s.tp_sizes.clear();
  for (const json& v : values_at(j, "inference_tp_size")) {
    const int k = positive_int(v, "inference_tp_size");
    if (s.nprocs % k != 0)
      refuse("inference_tp_size", fmt::format("{} does not divide nprocs {}", k, s.nprocs));
    s.tp_sizes.push_back(k);
  }
  if (j.contains("pin_parameters")) s.pins.clear();
  for (const json& v : values_at(j, "pin_parameters")) {
    if (!v.is_boolean()) refuse("pin_parameters", fmt::format("{} is not true or false", v.dump()));
    s.pins.push_back(v.get<bool>());
  }
}

}  // namespace

bool is_rollout_spec(const json& j) { return j.is_object() && j.contains("config"); }

namespace {

void check_keys(const json& j) {
  static const std::set<std::string> kKeys = {"config",
                                              "nprocs",
                                              "steps",
                                              "every",
                                              "prompts",
                                              "max_new_tokens",
                                              "metric",
                                              "memory_budget",
                                              "trial_timeout",
                                              "launcher",
                                              "batch",
                                              "cache_dtype",
                                              "inference_tp_size",
                                              "pin_parameters"};
  for (const auto& item : j.items()) {
    if (item.key() == "model" || item.key() == "dtype")
      refuse(item.key(),
             "a rollout spec (one with \"config\") trains the config's model at its "
             "precision: leave it out");
    if (!kKeys.count(item.key())) refuse(item.key(), "unknown key");
  }
}

// What each rollout generates, the spec's values over the config's rollout's.
void parse_generation(const json& j, RolloutSpec& s) {
  const json rollout = base_rollout(s.base);
  s.prompts = text_at(j, "prompts");
  if (s.prompts.empty() && rollout.contains("prompts") && rollout["prompts"].is_string())
    s.prompts = rollout["prompts"].get<std::string>();
  if (s.prompts.empty())
    refuse("prompts", "give it here or as the config's hybrid.rollout.prompts");
  if (rollout.contains("max_new_tokens"))
    s.max_new_tokens =
        positive_int(rollout["max_new_tokens"], "config's hybrid.rollout.max_new_tokens");
  if (j.contains("max_new_tokens"))
    s.max_new_tokens = positive_int(j["max_new_tokens"], "max_new_tokens");
  if (j.contains("metric")) s.metric = parse_generate_metric(j["metric"]);
  if (s.metric == Metric::latency && s.max_new_tokens < 2)
    refuse("max_new_tokens", "latency_p99 times decode steps: give at least 2");
}

// The base config as the engine reads it on nprocs ranks: its compute dtype
// (the default cache dtype) and data-parallel ranks (the prompts' share).
void check_base(RolloutSpec& s) {
  try {
    const auto base = engine::parse_config(without_autotuning(s.base), s.nprocs);
    if (s.cache_dtypes.empty()) s.cache_dtypes.push_back(base.param_dtype());
    s.data_parallel = base.parallel.data_parallel;
  } catch (const engine::ConfigError& e) {
    refuse("config", fmt::format("{} on {} rank(s): {}", s.config_path, s.nprocs, e.what()));
  }
}

}  // namespace

RolloutSpec parse_rollout_spec(const json& j) {
  check_keys(j);
  RolloutSpec s;
  s.config_path = text_at(j, "config");
  s.base = read_config(s.config_path);
  if (j.contains("nprocs")) s.nprocs = positive_int(j["nprocs"], "nprocs");
  if (j.contains("steps")) s.steps = positive_int(j["steps"], "steps");
  if (j.contains("every")) s.every = positive_int(j["every"], "every");
  if (s.every > s.steps)
    refuse("every", fmt::format("{} is past steps {}: no rollout would run", s.every, s.steps));
  parse_generation(j, s);
  if (j.contains("memory_budget"))
    s.memory_budget = engine::parse_byte_size(j["memory_budget"], "generate spec: memory_budget");
  if (j.contains("trial_timeout"))
    s.trial_timeout_s = positive_int(j["trial_timeout"], "trial_timeout");
  if (j.contains("launcher")) {
    if (!j["launcher"].is_string()) refuse("launcher", "must be a template string");
    s.launcher = j["launcher"].get<std::string>();
  }
  parse_axes(j, s);
  check_base(s);
  return s;
}

std::optional<RolloutSpec> load_rollout_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TuneError(fmt::format("generate spec: cannot read {}", path));
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  // Not JSON, or no "config": the single-process spec's reader says what it is.
  if (j.is_discarded() || !is_rollout_spec(j)) return std::nullopt;
  return parse_rollout_spec(j);
}

std::string RolloutCandidate::key() const {
  return fmt::format("b{}-{}-tp{}-{}", batch, kernels::dtype_name(cache_dtype), inference_tp_size,
                     pin_parameters ? "pin" : "nopin");
}

json rollout_trial_config(const RolloutSpec& s, const RolloutCandidate& c) {
  json cfg = without_autotuning(s.base);
  cfg["hybrid_engine"]["enabled"] = true;
  cfg["hybrid_engine"]["inference_tp_size"] = c.inference_tp_size;
  cfg["hybrid_engine"]["pin_parameters"] = c.pin_parameters;
  json& r = cfg["hybrid"]["rollout"];
  r["every"] = s.every;
  r["prompts"] = s.prompts;
  r["max_new_tokens"] = s.max_new_tokens;
  r["batch"] = c.batch;
  r["cache_dtype"] = kernels::dtype_name(c.cache_dtype);
  if (s.memory_budget) cfg["hybrid"]["memory_budget"] = s.memory_budget;
  return cfg;
}

namespace {

// Per rank, while a rollout generates: see the header.
void predict(RolloutCandidate& c, const RolloutSpec& s, const engine::Config& cfg,
             const std::vector<std::vector<int>>& prompts) {
  using engine::MemCategory;
  auto choice = kernels::make_backend("auto", 0);
  const kernels::Backend& backend = *choice.backend;
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const int k = c.inference_tp_size;
  engine::GenerationShape shape;
  shape.rows = c.batch * k;  // a replica's group generates its ranks' rows together
  shape.max_tokens = int(longest) + s.max_new_tokens;
  shape.cache_dtype = c.cache_dtype;
  shape.tensor_parallel = k;
  c.predicted_cache = engine::predict_kv_cache(cfg.model, shape);
  // Positions: a kept cache's (release_inference_cache false) hold max(rows, tokens).
  const uint64_t positions = uint64_t(std::max(shape.rows, shape.max_tokens)) * sizeof(int32_t);
  const engine::MemoryPrediction training = engine::predict_memory(cfg, s.nprocs, backend);
  // A pinned call holds every gathered unit beside the resident parameters; the
  // training step's gathered peak is released by then.
  const uint64_t resident_params =
      engine::engine_layouts(cfg, s.nprocs, 0).device.resident_bytes()[size_t(MemCategory::params)];
  const uint64_t params = std::max(training[MemCategory::params],
                                   resident_params + engine::predict_pinned_parameters(cfg));
  c.predicted_bytes =
      training.total() - training[MemCategory::params] + params + c.predicted_cache + positions;
  if (k > 1) {  // the replica's own engine, and its whole logits of a call
    const engine::Config replica = InferenceReplica::config_for(cfg, s.nprocs);
    c.predicted_bytes += engine::predict_memory(replica, s.nprocs, backend).total() +
                         uint64_t(shape.rows) * uint64_t(replica.padded_vocab()) *
                             kernels::dtype_size(replica.param_dtype());
  }
}

// Why the candidate is not run ("" when it is): the engine's refusal, a share
// the prompts do not make, the same run as an earlier candidate, the budget.
std::string prune_reason(RolloutCandidate& c, const RolloutSpec& s,
                         const std::vector<std::vector<int>>& prompts,
                         std::map<std::string, std::string>& runs) {
  engine::Config cfg;
  try {
    cfg = engine::parse_config(c.config, s.nprocs);
  } catch (const engine::ConfigError& e) {
    return e.what();
  }
  const int dp = cfg.parallel.data_parallel;
  if (prompts.size() % size_t(dp) != 0)
    return fmt::format("{} prompts do not share out evenly over {} data-parallel ranks",
                       prompts.size(), dp);
  predict(c, s, cfg, prompts);
  // pin_parameters acts under ZeRO-3 on the training engine only.
  const bool pin_matters = cfg.zero.stage == 3 && c.inference_tp_size == 1;
  RolloutCandidate same = c;
  if (!pin_matters) same.pin_parameters = false;
  const auto [it, fresh] = runs.emplace(same.key(), c.key());
  if (!fresh)
    return fmt::format(
        "the same run as {}: pin_parameters acts only under ZeRO-3 with "
        "inference_tp_size 1 (ZeRO stage {}, inference_tp_size {})",
        it->second, cfg.zero.stage, c.inference_tp_size);
  if (s.memory_budget && c.predicted_bytes > s.memory_budget)
    return fmt::format("predicted {} > memory budget {} (cache {})",
                       base::format_bytes(c.predicted_bytes), base::format_bytes(s.memory_budget),
                       base::format_bytes(c.predicted_cache));
  return "";
}

}  // namespace

std::vector<RolloutCandidate> rollout_candidates(const RolloutSpec& s,
                                                 const std::vector<std::vector<int>>& prompts) {
  std::vector<RolloutCandidate> out;
  std::map<std::string, std::string> runs;  // a run's key (pin as it acts) → its first candidate
  std::set<std::string> seen;
  const int share = std::max(1, int(prompts.size() / size_t(s.data_parallel)));
  for (int k : s.tp_sizes)
    for (bool pin : s.pins)
      for (int b : s.batches)
        for (const auto& dt : s.cache_dtypes) {
          RolloutCandidate c;
          c.inference_tp_size = k;
          c.pin_parameters = pin;
          c.cache_dtype = dt;
          c.batch = b > 0 ? std::min(b, share) : share;
          if (!seen.insert(c.key()).second) continue;  // a batch past the share: tried once
          c.config = rollout_trial_config(s, c);
          c.pruned = prune_reason(c, s, prompts, runs);
          out.push_back(std::move(c));
        }
  return out;
}

}  // namespace hybrid::autotune
