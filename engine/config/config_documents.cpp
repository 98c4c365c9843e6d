// Documents as units: hybrid.data's packing, separator, shuffle and seed keys,
// dynamic batching (ours, hybrid.data.dynamic_batching, and DeepSpeed's
// data_efficiency.data_sampling.dynamic_batching as written), and the checks
// against the batch shape once it is known.
#include <fmt/format.h>

#include <climits>
#include <cstdint>
#include <stdexcept>

#include "engine/config/config_reader.h"
#include "engine/data/dynamic_batching.h"

namespace hybrid::engine::config_detail {

namespace {

constexpr int64_t kIntMax = INT_MAX;

// Both spellings: ours (min_batch, max_batch, lr_scaling) and DeepSpeed's
// (min_batch_size, max_batch_size, lr_scaling_method).
void read_dynamic_batching(ObjectReader& r, bool deepspeed, DynamicBatching& d) {
  if (auto v = r.boolean("enabled")) d.enabled = *v;
  if (auto v = r.integer("max_tokens", 1, INT64_MAX)) d.max_tokens = *v;
  if (auto v = r.integer(deepspeed ? "min_batch_size" : "min_batch", 1, kIntMax))
    d.min_batch = int(*v);
  if (auto v = r.integer(deepspeed ? "max_batch_size" : "max_batch", 0, kIntMax,
                         "a non-negative integer (0: no limit)"))
    d.max_batch = int(*v);
  if (auto v = r.choice(deepspeed ? "lr_scaling_method" : "lr_scaling", {"none", "linear", "sqrt"}))
    d.lr_scaling = *v;
}

}  // namespace

void parse_documents(ObjectReader& data, Config& c) {
  DataConfig& d = c.data;
  if (auto v = data.boolean("packing")) d.packing = *v;
  if (auto v = data.integer("separator", 0, INT32_MAX, "a token id")) d.separator = *v;
  if (auto v = data.boolean("shuffle")) d.shuffle = *v;
  if (auto v = data.integer("seed", 0, INT64_MAX, "a non-negative integer"))
    d.shuffle_seed = uint64_t(*v);
  if (const nlohmann::json* b = data.object("dynamic_batching")) {
    ObjectReader r(*b, "hybrid.data.dynamic_batching", c.ignored_keys);
    read_dynamic_batching(r, false, d.dynamic_batching);
    r.finish();
  }
}

void parse_data_efficiency(const nlohmann::json& block, Config& c) {
  ObjectReader r(block, "data_efficiency", c.ignored_keys);
  if (auto v = r.integer("seed", 0, INT64_MAX, "a non-negative integer"))
    c.data.shuffle_seed = uint64_t(*v);
  r.accept("enabled");
  if (const nlohmann::json* s = r.object("data_sampling")) {
    ObjectReader sampling(*s, "data_efficiency.data_sampling", c.ignored_keys);
    sampling.accept("enabled");
    if (const nlohmann::json* b = sampling.object("dynamic_batching")) {
      ObjectReader dyn(*b, "data_efficiency.data_sampling.dynamic_batching", c.ignored_keys);
      read_dynamic_batching(dyn, true, c.data.dynamic_batching);
      // Documents are picked in a shuffled order (hybrid.data.shuffle): the
      // other orders and the analyzer's metrics path are DeepSpeed's own.
      dyn.accept("verbose");
      dyn.finish();
    }
    sampling.finish();
  }
  r.finish();
}

void check_documents(const Config& c) {
  const DataConfig& d = c.data;
  if (!d.documents()) return;
  if (d.synthetic)
    throw ConfigError(
        "config: hybrid.data.packing and dynamic batching need documents: token shards "
        "(hybrid.data.train), not synthetic data");
  // The loader's own checks (engine/data/dynamic_batching.h), as a ConfigError.
  const int rows = c.train_micro_batch_size_per_gpu, T = d.seq_len;
  try {
    validate_dynamic_batching(dynamic_batch_options(d.dynamic_batching, rows, T), rows, T);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("config: {}", e.what()));
  }
}

}  // namespace hybrid::engine::config_detail
