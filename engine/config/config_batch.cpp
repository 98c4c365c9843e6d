// The batch sizes: DeepSpeed's train_batch_size, train_micro_batch_size_per_gpu
// and gradient_accumulation_steps, those not given derived from the others and
// the world size (runtime/config.py).
#include <fmt/format.h>

#include <climits>
#include <string>

#include "engine/config/config.h"
#include "engine/config/config_reader.h"

namespace hybrid::engine::config_detail {

namespace {

constexpr int64_t kIntMax = INT_MAX;

// The three batch sizes, some given and the rest derived, and how the derived
// ones came about (for the error messages).
struct BatchSizes {
  int64_t t = 0, m = 0, g = 0;  // train batch, micro-batch per GPU, accumulation steps
  std::string how;
};

// DeepSpeed's _set_batch_related_parameters.
BatchSizes derive_batch(ObjectReader& top, int64_t w) {
  const auto tb = top.integer("train_batch_size", 1, kIntMax);
  const auto mb = top.integer("train_micro_batch_size_per_gpu", 1, kIntMax);
  const auto gas = top.integer("gradient_accumulation_steps", 1, kIntMax);
  BatchSizes b;
  auto& [t, m, g, how] = b;
  // The one size missing beside t: t // x // y, in that order, and how it came about.
  const auto divided = [&](const char* what, const char* x_name, int64_t x, const char* y_name,
                           int64_t y) {
    // b's members, not the bindings: lambdas capture structured bindings only
    // from C++20 and the fuzz build's clang does not yet.
    b.how = fmt::format("{} derived as train_batch_size {} // {} {} // {} {}", what, b.t, x_name, x,
                        y_name, y);
    return b.t / x / y;
  };
  if (tb && mb && gas) {
    t = *tb, m = *mb, g = *gas;
  } else if (tb && mb) {
    t = *tb, m = *mb;
    g = divided("gradient_accumulation_steps", "train_micro_batch_size_per_gpu", m, "world_size",
                w);
  } else if (tb && gas) {
    t = *tb, g = *gas;
    m = divided("train_micro_batch_size_per_gpu", "world_size", w, "gradient_accumulation_steps",
                g);
  } else if (mb && gas) {
    m = *mb, g = *gas, t = m * g * w;  // int64: no overflow for int inputs and sane world sizes
    how = "train_batch_size derived as their product";
  } else if (tb) {
    t = *tb, g = 1, m = t / w;
    how = fmt::format(
        "gradient_accumulation_steps defaults to 1, train_micro_batch_size_per_gpu "
        "derived as train_batch_size {} // world_size {}",
        t, w);
  } else if (mb) {
    m = *mb, g = 1, t = m * w;
    how = "gradient_accumulation_steps defaults to 1, train_batch_size derived";
  } else {
    throw ConfigError(
        "config: train_batch_size or train_micro_batch_size_per_gpu must be given (\"auto\" "
        "counts as not given; gradient_accumulation_steps alone is not enough)");
  }
  return b;
}

}  // namespace

// DeepSpeed's _batch_assertion, on the derived sizes.
void resolve_batch(ObjectReader& top, int world_size, Config& c) {
  const int64_t w = world_size;
  const auto [t, m, g, how] = derive_batch(top, w);
  const std::string why = how.empty() ? "" : " (" + how + ")";
  if (m <= 0)
    throw ConfigError(
        fmt::format("config: train_micro_batch_size_per_gpu resolves to {}{}; it "
                    "must be greater than 0",
                    m, why));
  if (g <= 0)
    throw ConfigError(
        fmt::format("config: gradient_accumulation_steps resolves to {}{}; it must "
                    "be greater than 0",
                    g, why));
  if (t != m * g * w)
    throw ConfigError(
        fmt::format("config: train_batch_size {} must equal train_micro_batch_size_per_gpu {} * "
                    "gradient_accumulation_steps {} * world_size {} = {}{}",
                    t, m, g, w, m * g * w, why));
  if (t > kIntMax)
    throw ConfigError(
        fmt::format("config: train_batch_size resolves to {}{}, more than {}", t, why, kIntMax));
  c.train_batch_size = int(t);
  c.train_micro_batch_size_per_gpu = int(m);
  c.gradient_accumulation_steps = int(g);
}

}  // namespace hybrid::engine::config_detail
