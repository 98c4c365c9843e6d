// DeepSpeed's "autotuning" block of ds_config.json, as hybrid-tune reads it.
// Keys and defaults are DeepSpeed's (autotuning/constants.py); command-line
// options override them. Keys that only make sense for DeepSpeed's Python
// launcher (results_dir, exps_dir, arg_mappings, ...) are accepted and listed
// as ignored. The engine's parse_config reports the whole block as ignored;
// hybrid-tune removes it from every config it writes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hybrid::autotune {

struct AutotuningOptions {
  bool present = false;                   // the block exists
  std::string metric = "throughput";      // throughput | latency | flops
  std::string tuner_type = "gridsearch";  // gridsearch | random | model_based
  int tuner_early_stopping = 5;           // trials without improvement before stopping
  int tuner_num_trials = 50;              // at most this many trials
  int start_profile_step = 3;             // first measured step (1-based)
  int end_profile_step = 5;               // last measured step; trials run this many steps
  int min_train_micro_batch_size_per_gpu = 1;
  int max_train_micro_batch_size_per_gpu = 1024;
  int num_tuning_micro_batch_sizes = 3;         // micro-batch sizes tuned when the space is default
  std::optional<int64_t> max_train_batch_size;  // candidates above it are dropped
  std::vector<std::string> ignored_keys;        // "autotuning.results_dir", ...
};

// Reads config["autotuning"] (absent: defaults). Throws TuneError naming the
// key: "config: autotuning.metric must be one of throughput, latency, flops, got \"speed\"".
AutotuningOptions parse_autotuning(const nlohmann::json& config);

// Strategy and metric names of the block mapped onto hybrid-tune's
// ("gridsearch" → "grid", "model_based" → "model").
std::string strategy_from_tuner_type(const std::string& tuner_type);

}  // namespace hybrid::autotune
