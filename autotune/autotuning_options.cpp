#include "autotune/autotuning_options.h"

#include <fmt/format.h>

#include <limits>

#include "autotune/tune_error.h"
#include "base/json_read.h"

namespace hybrid::autotune {

using nlohmann::json;

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

std::string choice(const json& v, const std::string& key, const std::vector<std::string>& allowed) {
  const std::string s = base::json_string(v, "config", key);
  for (const auto& a : allowed)
    if (s == a) return s;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  base::json_fail("config", key, "one of " + list, v);
}

// The keys whose value is a whole number, and its least value.
struct IntKey {
  const char* name;
  int AutotuningOptions::*field;
  int64_t min;
};

const IntKey* int_key(const std::string& k) {
  using O = AutotuningOptions;
  static const IntKey keys[] = {
      {"tuner_early_stopping", &O::tuner_early_stopping, 0},
      {"tuner_num_trials", &O::tuner_num_trials, 1},
      {"start_profile_step", &O::start_profile_step, 1},
      {"end_profile_step", &O::end_profile_step, 1},
      {"min_train_micro_batch_size_per_gpu", &O::min_train_micro_batch_size_per_gpu, 1},
      {"max_train_micro_batch_size_per_gpu", &O::max_train_micro_batch_size_per_gpu, 1},
      {"num_tuning_micro_batch_sizes", &O::num_tuning_micro_batch_sizes, 1}};
  for (const IntKey& key : keys)
    if (k == key.name) return &key;
  return nullptr;
}

}  // namespace

// base's typed reads throw JsonReadError; what the autotuner throws is a TuneError.
AutotuningOptions parse_autotuning(const json& config) try {
  AutotuningOptions o;
  if (!config.is_object() || !config.contains("autotuning")) return o;
  const json& block = config["autotuning"];
  if (block.is_null()) return o;
  if (!block.is_object()) base::json_fail("config", "autotuning", "an object", block);
  o.present = true;
  for (auto it = block.begin(); it != block.end(); ++it) {
    const std::string key = "autotuning." + it.key();
    const json& v = it.value();
    if (v.is_null() || (v.is_string() && v.get<std::string>() == "auto")) continue;
    const std::string& k = it.key();
    if (k == "metric") {
      o.metric = choice(v, key, {"throughput", "latency", "flops"});
    } else if (k == "tuner_type") {
      o.tuner_type = choice(v, key, {"gridsearch", "random", "model_based"});
    } else if (const IntKey* ik = int_key(k)) {
      o.*(ik->field) = int(base::json_integer(v, "config", key, ik->min, kIntMax));
    } else if (k == "max_train_batch_size") {
      o.max_train_batch_size = base::json_integer(v, "config", key, 1, kIntMax);
    } else {
      // DeepSpeed's launcher keys (enabled, fast, results_dir, exps_dir,
      // arg_mappings, ...) steer its Python launcher, not the search.
      o.ignored_keys.push_back(key);
    }
  }
  if (o.end_profile_step < o.start_profile_step)
    throw TuneError(fmt::format(
        "config: autotuning.end_profile_step ({}) must be >= autotuning.start_profile_step ({})",
        o.end_profile_step, o.start_profile_step));
  if (o.max_train_micro_batch_size_per_gpu < o.min_train_micro_batch_size_per_gpu)
    throw TuneError(
        fmt::format("config: autotuning.max_train_micro_batch_size_per_gpu ({}) must be >= "
                    "autotuning.min_train_micro_batch_size_per_gpu ({})",
                    o.max_train_micro_batch_size_per_gpu, o.min_train_micro_batch_size_per_gpu));
  return o;
} catch (const base::JsonReadError& e) {
  throw TuneError(e.what());
}

std::string strategy_from_tuner_type(const std::string& tuner_type) {
  if (tuner_type == "gridsearch") return "grid";
  if (tuner_type == "model_based") return "model";
  return tuner_type;
}

}  // namespace hybrid::autotune
