// The search space: which ds_config keys the autotuner varies, and over which
// values. A space file is a JSON object whose keys are ds_config paths (dotted,
// or nested as in ds_config.json) or their short names, and whose values are
//   a list                    [1, 2, 4]
//   a single value            2 (not varied)
//   a range (inclusive)       {"range": [1, 8]} or {"range": [0, 3, 1]} (lo, hi, step)
//   powers of two in [lo, hi] {"pow2": [1, 16]}  (alias "powers_of_two")
//   explicit values           {"values": [true, false]}
// Axes (short names in trial keys): train_micro_batch_size_per_gpu (mbs),
// gradient_accumulation_steps (gas) or a fixed global batch train_batch_size
// (tbs, accumulation derived), zero_optimization.stage (stage),
// reduce_bucket_size (rbs), allgather_bucket_size (agbs), overlap_comm (overlap),
// stage3_prefetch_bucket_size (prefetch),
// stage3_param_persistence_threshold (persist), stage3_max_live_parameters
// (maxlive), offload_optimizer.device (offopt), offload_param.device (offparam),
// hybrid.activation_checkpointing.every (ckpt: 0 off, k every k-th block),
// pipeline.stages (pp), tensor_model_parallel_size (tp: the batch triad then
// counts world / (pp · tp) data-parallel ranks), optimizer.type (opt: the
// optimizer's communication, plain or 1-bit compressed, one family's types:
// autotune/optimizer_axis.h; never in the default space).
// Each axis names the ZeRO stages where it matters; at other stages it keeps the
// base config's value and is left out of the trial key (no duplicate trials).
// Memory-saving axes (offopt, offparam, ckpt) trade time for memory: their
// other values are tried only for candidates that would not fit without them
// (autotune/pruning.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/autotuning_options.h"

namespace hybrid::autotune {

enum class AxisType { integer, boolean, string };

struct AxisDef {
  std::string name;        // the ds_config dotted path: "zero_optimization.stage"
  std::string short_name;  // in trial keys: "stage"
  AxisType type = AxisType::integer;
  int64_t lo = 1, hi = INT32_MAX;    // integer axes
  std::vector<std::string> choices;  // string axes
  unsigned stages = 0xF;             // bit s set: matters at ZeRO stage s
  std::vector<std::string> aliases;  // other accepted spellings
  // Memory-saving axes: the value that saves nothing ("none", 0); null otherwise.
  nlohmann::json saves_nothing;
  bool applies_at(int stage) const { return (stages >> stage) & 1u; }
  bool memory_saving() const { return !saves_nothing.is_null(); }
};

// Every axis, in the order trial keys and the grid use.
const std::vector<AxisDef>& axis_table();
// By dotted name, short name or alias; nullptr when unknown.
const AxisDef* find_axis(std::string_view name);

struct Axis {
  const AxisDef* def = nullptr;
  std::vector<nlohmann::json> values;  // validated, duplicates removed, order kept
};

struct SearchSpace {
  std::vector<Axis> axes;  // table order
  // Default spaces only: keep this many micro-batch sizes per stage among those
  // that fit in memory (DeepSpeed's num_tuning_micro_batch_sizes); 0: all.
  int thin_micro_batch_sizes = 0;
  std::vector<std::string> notes;  // what was assumed or skipped, for the log

  const Axis* find(std::string_view name) const;  // dotted name
  size_t grid_size() const;                       // product of the axis sizes
  nlohmann::json to_json() const;                 // explicit lists by dotted name
};

// Throws TuneError: "space: zero_optimization.stage: 5 is not in 0..3", ...
SearchSpace parse_space(const nlohmann::json& j);
SearchSpace load_space(const std::string& path);

// The space when no file is given: micro-batch sizes (powers of two between the
// autotuning block's min and max) × ZeRO stages 0–3, as DeepSpeed's autotuner
// explores; a config that fixes train_batch_size keeps it (accumulation derived).
SearchSpace default_space(const AutotuningOptions& opts);

// Formats one axis value for a trial key: 4, true, cpu.
std::string format_value(const nlohmann::json& v);

}  // namespace hybrid::autotune
