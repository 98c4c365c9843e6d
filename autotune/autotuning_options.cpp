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
    } else if (k == "tuner_early_stopping") {
      o.tuner_early_stopping = int(base::json_integer(v, "config", key, 0, kIntMax));
    } else if (k == "tuner_num_trials") {
      o.tuner_num_trials = int(base::json_integer(v, "config", key, 1, kIntMax));
    } else if (k == "start_profile_step") {
      o.start_profile_step = int(base::json_integer(v, "config", key, 1, kIntMax));
    } else if (k == "end_profile_step") {
      o.end_profile_step = int(base::json_integer(v, "config", key, 1, kIntMax));
    } else if (k == "min_train_micro_batch_size_per_gpu") {
      o.min_train_micro_batch_size_per_gpu = int(base::json_integer(v, "config", key, 1, kIntMax));
    } else if (k == "max_train_micro_batch_size_per_gpu") {
      o.max_train_micro_batch_size_per_gpu = int(base::json_integer(v, "config", key, 1, kIntMax));
    } else if (k == "num_tuning_micro_batch_sizes") {
      o.num_tuning_micro_batch_sizes = int(base::json_integer(v, "config", key, 1, kIntMax));
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
