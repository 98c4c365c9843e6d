// DeepSpeed's hybrid_engine block, with DeepSpeed's defaults, and our
// hybrid.rollout block. What runs is Engine::generate (docs/generation.md):
// max_out_tokens bounds a sequence, pin_parameters gathers ZeRO-3's layers at
// once and release_inference_cache says whether the cache outlives a call,
// when the block is enabled; inference tensor parallelism is refused
// by name; the keys that shape DeepSpeed's own inference containers are read
// and warned.
#include <fmt/format.h>

#include <climits>
#include <cstdint>

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
  if (auto v = r.boolean("release_inference_cache")) h.release_inference_cache = *v;
  if (auto v = r.boolean("pin_parameters")) h.pin_parameters = *v;
  if (auto v = r.integer("tp_gather_partition_size", 1, kIntMax)) {
    h.tp_gather_partition_size = int(*v);
    c.warnings.push_back(
        "hybrid_engine.tp_gather_partition_size: no effect, the inference_tp_size replica takes "
        "the whole model from gather_parameters at once");
  }
  r.finish();
}

void check_inference_tp(const Config& c, int world_size) {
  const int k = c.hybrid_engine.inference_tp_size;
  if (k == 1) return;
  if (world_size % k != 0)
    throw ConfigError(fmt::format(
        "config: hybrid_engine.inference_tp_size {} does not divide the world of {} rank(s)", k,
        world_size));
  if (c.parallel.tensor > 1 || c.parallel.pipeline_stages > 1)
    throw ConfigError(fmt::format(
        "config: hybrid_engine.inference_tp_size {} reshards a data-parallel run's weights for "
        "generation; with tensor_model_parallel_size {} and pipeline.stages {} give 1 (generation "
        "uses the training tensor parallelism as it is)",
        k, c.parallel.tensor, c.parallel.pipeline_stages));
  check_tensor_split(c, k, "hybrid_engine.inference_tp_size");
}

void parse_rollout(const nlohmann::json& block, Config& c) {
  ObjectReader r(block, "hybrid.rollout", c.ignored_keys);
  RolloutConfig& o = c.rollout;
  if (auto v = r.integer("every", 0, kIntMax, "a non-negative integer (0: no rollouts)"))
    o.every = int(*v);
  if (auto v = r.string("prompts")) o.prompts = *v;
  if (auto v = r.string("tokenizer")) o.tokenizer = *v;
  if (auto v = r.integer("max_new_tokens", 1, kIntMax)) o.max_new_tokens = int(*v);
  if (auto v = r.number("temperature", 0.0, 1e30, false, "a number >= 0 (0: greedy)"))
    o.sampling.temperature = float(*v);
  if (auto v = r.integer("top_k", 0, kIntMax, "a non-negative integer (0: no cut)"))
    o.sampling.top_k = int(*v);
  if (auto v = r.number("top_p", 0.0, 1.0, true, "a number in (0, 1]"))
    o.sampling.top_p = float(*v);
  if (auto v = r.integer("seed", 0, INT64_MAX, "a non-negative integer"))
    o.sampling.seed = uint64_t(*v);
  if (auto v =
          r.integer("batch", 0, kIntMax, "a non-negative integer (0: all of a rank's prompts)"))
    o.batch = int(*v);
  if (auto v = r.choice("cache_dtype", {"fp32", "bf16", "fp16"}))
    o.cache_dtype = kernels::parse_dtype(*v);
  r.finish();
  if (o.every > 0 && o.prompts.empty())
    throw ConfigError("config: hybrid.rollout.every is " + std::to_string(o.every) +
                      ": hybrid.rollout.prompts must name the prompts file");
}

}  // namespace hybrid::engine::config_detail
