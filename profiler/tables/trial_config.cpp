#include "profiler/tables/trial_config.h"

#include <cmath>
#include <limits>

#include "base/json_read.h"

namespace hybrid::profiler {

using nlohmann::json;

namespace {

// A whole number that fits an int (5e8 counts), else unknown.
std::optional<int> int_at(const json& j, std::string_view dotted) {
  const std::optional<double> v = base::number_at(j, dotted);
  if (!v || std::floor(*v) != *v || std::fabs(*v) > double(std::numeric_limits<int>::max()))
    return std::nullopt;
  return int(*v);
}

bool enabled(const json* block) {
  return block && base::boolean_at(*block, "enabled").value_or(false);
}

// DeepSpeed reads "bf16" and only without it the older "bfloat16".
Precision read_precision(const json& j) {
  const json* bf16 = base::at_dotted(j, "bf16");
  if (!bf16) bf16 = base::at_dotted(j, "bfloat16");
  if (enabled(bf16)) return Precision::bf16;
  if (enabled(base::at_dotted(j, "fp16"))) return Precision::fp16;
  return Precision::fp32;
}

// "zero_optimization" is an object, or (deprecated) a boolean: true is stage 1.
void read_zero(const json& j, TrialConfig& c) {
  const json* z = base::at_dotted(j, "zero_optimization");
  if (!z) return;
  if (z->is_boolean()) {
    c.zero_stage = z->get<bool>() ? 1 : 0;
    return;
  }
  c.zero_stage = int_at(*z, "stage");
  c.reduce_bucket = base::number_at(*z, "reduce_bucket_size");
  c.allgather_bucket = base::number_at(*z, "allgather_bucket_size");
  c.overlap_comm = base::boolean_at(*z, "overlap_comm");
  c.offload_optimizer = base::string_at(*z, "offload_optimizer.device");
  c.offload_param = base::string_at(*z, "offload_param.device");
}

}  // namespace

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::unknown:
      break;
  }
  return "";
}

TrialConfig read_trial_config(const json& j) {
  TrialConfig c;
  if (!j.is_object()) return c;
  c.precision = read_precision(j);
  c.micro_batch = int_at(j, "train_micro_batch_size_per_gpu");
  c.grad_accum = int_at(j, "gradient_accumulation_steps");
  read_zero(j, c);
  return c;
}

TrialConfig parse_trial_config(std::string_view config_json) {
  return read_trial_config(json::parse(config_json, nullptr, /*allow_exceptions=*/false));
}

}  // namespace hybrid::profiler
