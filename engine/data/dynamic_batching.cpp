#include "engine/data/dynamic_batching.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace hybrid::engine {

namespace {

[[noreturn]] void refuse(std::string_view key, std::string_view rule, int64_t value) {
  throw std::invalid_argument(
      fmt::format("hybrid.data.dynamic_batching.{} must be {}, got {}", key, rule, value));
}

}  // namespace

DynamicBatchOptions dynamic_batch_options(const DynamicBatching& c, int rows, int seq_len) {
  if (!c.enabled) return {};
  return {c.max_tokens > 0 ? c.max_tokens : int64_t(rows) * seq_len, c.min_batch, c.max_batch};
}

void validate_dynamic_batching(const DynamicBatchOptions& o, int rows, int seq_len) {
  if (!o.enabled()) return;
  if (o.max_tokens < 0) refuse("max_tokens", "0 (off) or positive", o.max_tokens);
  if (o.min_batch < 1) refuse("min_batch", ">= 1", o.min_batch);
  if (o.max_batch < 0) refuse("max_batch", "0 (no limit) or positive", o.max_batch);
  if (o.max_batch > 0 && o.min_batch > o.max_batch)
    refuse("min_batch", fmt::format("<= max_batch ({})", o.max_batch), o.min_batch);
  if (o.min_batch > rows)
    refuse("min_batch", fmt::format("<= the micro-batch's rows ({})", rows), o.min_batch);
  const int64_t low = int64_t(o.min_batch) * seq_len, high = int64_t(rows) * seq_len;
  if (o.max_tokens < low || o.max_tokens > high)
    refuse("max_tokens",
           fmt::format("in [min_batch·seq_len, rows·seq_len] = [{}·{}, {}·{}] = [{}, {}]",
                       o.min_batch, seq_len, rows, seq_len, low, high),
           o.max_tokens);
}

PackingLimits packing_limits(const DynamicBatchOptions& o, int rows, int seq_len) {
  PackingLimits limits{rows, seq_len, 0, 0};
  if (o.enabled()) {
    limits.max_tokens = o.max_tokens;
    limits.max_units = o.max_batch;
  }
  return limits;
}

double lr_scale(std::string_view method, int64_t batch_size, int64_t base_batch_size) {
  if (base_batch_size < 1 || batch_size < 0)
    throw std::invalid_argument(
        fmt::format("lr scaling: batch size {} and base batch size {} must be >= 0 and >= 1",
                    batch_size, base_batch_size));
  const double ratio = double(batch_size) / double(base_batch_size);
  if (method == "none") return 1.0;
  if (method == "linear") return ratio;
  if (method == "sqrt") return std::sqrt(ratio);
  throw std::invalid_argument(fmt::format(
      "hybrid.data.dynamic_batching.lr_scaling must be none, linear or sqrt, got \"{}\"", method));
}

}  // namespace hybrid::engine
