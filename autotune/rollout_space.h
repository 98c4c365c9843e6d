// `hybrid-tune generate` in rollout mode: a generate spec that names a training
// ds_config.json ("config") tunes the generation inside hybrid-train's loop
// (hybrid.rollout, on the weights being trained under ZeRO) instead of
// hybrid-generate on its own. The axes are DeepSpeed's hybrid_engine keys
// inference_tp_size and pin_parameters, and hybrid.rollout's batch (the rows
// each rank decodes in one call) and cache_dtype; every trial is the base config
// with the hybrid_engine block enabled and those values set, run for `steps`
// steps on `nprocs` ranks, a rollout after every `every` steps.
//
//   {"config": "ds_config.json", "nprocs": 2, "steps": 3, "every": 1,
//    "prompts": "prompts.jsonl", "max_new_tokens": 16, "metric": "tokens_per_s",
//    "memory_budget": "2GB", "inference_tp_size": [1, 2], "pin_parameters": [false, true],
//    "batch": [1, 4], "cache_dtype": ["fp32", "bf16"], "trial_timeout": 600,
//    "launcher": "mpirun -np {nprocs} {cmd}"}
//
// Each candidate is checked by the engine's own parse_config for the world of
// `nprocs` ranks (inference_tp_size must divide the heads, the vocabulary...);
// what it refuses is pruned with its message. pin_parameters acts only under
// ZeRO-3 on the training engine (inference_tp_size 1): elsewhere the values
// after the first are the same run, pruned as such. Memory per rank: the
// training engine's peak (engine::predict_memory), its parameters raised to
// what a pinned call holds when that is more (the resident ones plus
// engine::predict_pinned_parameters), the key/value cache of a call of `batch`
// rows at the file's longest prompt (engine::predict_kv_cache; the kept cache's
// size) and its positions, and with inference_tp_size > 1 the resharded
// replica's engine (InferenceReplica::config_for) and its whole logits; over
// the budget is pruned, never run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autotune/metric.h"
#include "engine/config/config.h"
#include "kernels/dtype.h"

namespace hybrid::autotune {

struct RolloutSpec {
  std::string config_path;  // as given
  nlohmann::json base;      // its contents
  int nprocs = 1, steps = 3, every = 1;
  std::string prompts;      // the spec's, else the config's hybrid.rollout.prompts
  int max_new_tokens = 16;  // the spec's, else the config's rollout's
  Metric metric = Metric::tokens;
  uint64_t memory_budget = 0;  // bytes per rank; 0: none
  double trial_timeout_s = 600;
  std::string launcher;                      // "": the tuner's default for nprocs ranks
  std::vector<int> batches = {0};            // 0: each rank's whole share in one call
  std::vector<kernels::DType> cache_dtypes;  // default: the config's compute dtype
  std::vector<int> tp_sizes = {1};
  std::vector<bool> pins = {true};  // DeepSpeed's default
  int data_parallel = 1;  // the base config's on nprocs ranks: the prompts share out over them
};

// True when the spec names a training config: rollout mode.
bool is_rollout_spec(const nlohmann::json& j);
// Throws TuneError naming the key: "generate spec: inference_tp_size: 4 does not
// divide nprocs 2", an unknown key, "model" or "dtype" (the config says them).
RolloutSpec parse_rollout_spec(const nlohmann::json& j);
// nullopt when the file is a single-process spec (no "config").
std::optional<RolloutSpec> load_rollout_spec(const std::string& path);

struct RolloutCandidate {
  int batch = 0;  // rows a call (the share when it is smaller); 0: the share
  kernels::DType cache_dtype = kernels::DType::f32;
  int inference_tp_size = 1;
  bool pin_parameters = true;
  nlohmann::json config;  // the trial's ds_config.json
  uint64_t predicted_cache = 0;
  uint64_t predicted_bytes = 0;
  std::string pruned;       // why it is not run ("" when it is)
  std::string key() const;  // "b2-fp32-tp1-pin"
};

// The trial config of one point: the base with hybrid_engine enabled and the
// rollout's values set.
nlohmann::json rollout_trial_config(const RolloutSpec& s, const RolloutCandidate& c);

// Every inference_tp_size × pin_parameters × batch × cache dtype, in that order
// (a batch past a rank's share of the prompts is the share: tried once).
std::vector<RolloutCandidate> rollout_candidates(const RolloutSpec& s,
                                                 const std::vector<std::vector<int>>& prompts);

}  // namespace hybrid::autotune
