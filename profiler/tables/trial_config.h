// A typed view of a trial's ds_config.json: the knobs a sweep varies, read the
// way DeepSpeed reads them (precision from "fp16"/"bf16", falling back to the
// older "bfloat16" spelling; "zero_optimization": true meaning stage 1). For
// displays: it never throws, and a key with the wrong type stays unknown.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hybrid::profiler {

enum class Precision : uint8_t { unknown, fp32, fp16, bf16 };

std::string_view to_string(Precision p);  // "fp32", "fp16", "bf16"; "" when unknown

struct TrialConfig {
  Precision precision = Precision::unknown;      // fp32 unless fp16/bf16 is enabled
  std::optional<int> micro_batch;                // train_micro_batch_size_per_gpu
  std::optional<int> grad_accum;                 // gradient_accumulation_steps
  std::optional<int> zero_stage;                 // zero_optimization.stage
  std::optional<double> reduce_bucket;           // zero_optimization.reduce_bucket_size (elements)
  std::optional<double> allgather_bucket;        // zero_optimization.allgather_bucket_size
  std::optional<bool> overlap_comm;              // zero_optimization.overlap_comm
  std::optional<std::string> offload_optimizer;  // zero_optimization.offload_optimizer.device
  std::optional<std::string> offload_param;      // zero_optimization.offload_param.device

  std::string_view dtype() const { return to_string(precision); }
};

// A config that is not a JSON object gives an empty view (precision unknown).
TrialConfig read_trial_config(const nlohmann::json& config);
TrialConfig parse_trial_config(std::string_view config_json);

}  // namespace hybrid::profiler
