// Activation checkpointing: DeepSpeed's "activation_checkpointing" block, our
// per-block policy (hybrid.activation_checkpointing.every) and their
// resolution against the model depth. DeepSpeed configures checkpointing in
// this block and leaves the model to call checkpoint() on its layers; our
// GPT-2 is built in, so the block itself asks for every block to be
// checkpointed (as Megatron-DeepSpeed does with one layer per checkpoint),
// unless number_checkpoints or hybrid.activation_checkpointing.every says
// otherwise.
#include <fmt/format.h>

#include <climits>

#include "engine/config/config.h"
#include "engine/config/config_reader.h"

namespace hybrid::engine::config_detail {

using nlohmann::json;

void parse_activation_checkpointing(const json& block, Config& c) {
  ObjectReader r(block, "activation_checkpointing", c.ignored_keys);
  ActivationCheckpointingConfig& a = c.activation_checkpointing;
  if (auto v = r.boolean("partition_activations")) a.partition_activations = *v;
  if (auto v = r.boolean("cpu_checkpointing")) a.cpu_checkpointing = *v;
  if (auto v = r.boolean("contiguous_memory_optimization")) a.contiguous_memory_optimization = *v;
  if (auto v = r.integer("number_checkpoints", 1, INT_MAX)) a.number_checkpoints = int(*v);
  if (auto v = r.boolean("synchronize_checkpoint_boundary")) a.synchronize_checkpoint_boundary = *v;
  if (auto v = r.boolean("profile")) a.profile = *v;
  r.finish();
}

void parse_hybrid_checkpointing(const json& block, Config& c) {
  ObjectReader r(block, "hybrid.activation_checkpointing", c.ignored_keys);
  if (auto v =
          r.integer("every", 0, INT_MAX, "a non-negative integer (0: off, k: every k-th block)")) {
    c.activation_checkpointing.every = int(*v);
    c.activation_checkpointing.every_given = true;
  }
  r.finish();
}

void resolve_activation_checkpointing(bool deepspeed_block, Config& c) {
  ActivationCheckpointingConfig& a = c.activation_checkpointing;
  const int L = c.model.n_layer;
  const int n = a.number_checkpoints;
  // number_checkpoints bounds the checkpoints DeepSpeed keeps per forward: at
  // most n blocks, spread evenly (every ceil(L/n)-th block).
  const int from_number = n > 0 ? (L + n - 1) / n : 0;
  if (a.every_given) {
    if (n > 0 && a.every != from_number)
      throw ConfigError(fmt::format(
          "config: activation_checkpointing.number_checkpoints {} means every = {} over {} blocks "
          "(ceil({} / {})), but hybrid.activation_checkpointing.every is {}; give one of them",
          n, from_number, L, L, n, a.every));
  } else if (from_number > 0) {
    a.every = from_number;
  } else {
    // The pipeline's activation_checkpoint_interval asks for it as DeepSpeed's block does.
    a.every = deepspeed_block || c.parallel.activation_checkpoint_interval > 0 ? 1 : 0;
  }
  if (c.parallel.activation_checkpoint_interval > 1)
    c.warnings.push_back(fmt::format(
        "pipeline.activation_checkpoint_interval {}: checkpoints are per block here, so every "
        "block keeps its input (DeepSpeed keeps one input per {} layers)",
        c.parallel.activation_checkpoint_interval, c.parallel.activation_checkpoint_interval));
  if (!deepspeed_block) return;
  if (a.every == 0) {
    c.warnings.push_back(
        "activation_checkpointing: no effect, hybrid.activation_checkpointing.every is 0 (no "
        "block is checkpointed)");
    return;
  }
  if (a.partition_activations)
    c.warnings.push_back(
        "activation_checkpointing.partition_activations: no effect, it splits checkpoints across "
        "tensor-parallel ranks and hybrid keeps a checkpointed block's input whole on each of "
        "them");
  if (a.contiguous_memory_optimization)
    c.warnings.push_back(
        "activation_checkpointing.contiguous_memory_optimization: no effect, activation buffers "
        "are laid out once ahead of training (engine/memory/layout.h), so checkpoints are "
        "contiguous and never fragment");
}

}  // namespace hybrid::engine::config_detail
