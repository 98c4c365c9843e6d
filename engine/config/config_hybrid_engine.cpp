// DeepSpeed's hybrid_engine block, with DeepSpeed's defaults. What runs is
// Engine::generate (docs/generation.md): max_out_tokens bounds a sequence when
// the block is enabled; inference tensor parallelism is refused by name; the
// keys that shape DeepSpeed's own inference containers are read and warned.
#include <fmt/format.h>

#include <climits>

#include "engine/config/config_reader.h"

namespace hybrid::engine::config_detail {

namespace {
constexpr int64_t kIntMax = INT_MAX;
}  // namespace

void parse_hybrid_engine(const nlohmann::json& block, Config& c) {
  ObjectReader r(block, "hybrid_engine", c.ignored_keys);
  HybridEngineConfig& h = c.hybrid_engine;
  if (auto v = r.boolean("enabled")) h.enabled = *v;
  if (auto v = r.integer("max_out_tokens", 1, kIntMax)) h.max_out_tokens = int(*v);
  if (auto v = r.integer("inference_tp_size", 1, kIntMax)) h.inference_tp_size = int(*v);
  if (h.inference_tp_size != 1)
    throw ConfigError(fmt::format(
        "config: hybrid_engine.inference_tp_size is {}: generation under tensor parallelism is "
        "not supported yet (1 only)",
        h.inference_tp_size));
  if (auto v = r.boolean("release_inference_cache")) {
    h.release_inference_cache = *v;
    c.warnings.push_back(
        "hybrid_engine.release_inference_cache: no effect, the key/value cache is allocated for "
        "each generate call and released after it");
  }
  if (auto v = r.boolean("pin_parameters")) {
    h.pin_parameters = *v;
    c.warnings.push_back(
        "hybrid_engine.pin_parameters: no effect, ZeRO-3 gathers each module's parameters around "
        "its forward while generating, as while training");
  }
  if (auto v = r.integer("tp_gather_partition_size", 1, kIntMax)) {
    h.tp_gather_partition_size = int(*v);
    c.warnings.push_back(
        "hybrid_engine.tp_gather_partition_size: no effect without inference tensor parallelism");
  }
  r.finish();
}

}  // namespace hybrid::engine::config_detail
