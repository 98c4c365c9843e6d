// Activation checkpointing of decoder blocks (DeepSpeed's activation_checkpointing;
// docs/config.md). A checkpointed block keeps only its input: its internal
// activations go to one scratch set that every checkpointed block shares
// (CausalLM::activation_layout) and are recomputed in backward, just before the
// block's own backward reads them (ExecutionContext::recompute). The
// recomputation runs the same kernels on the same inputs and parameters, so
// gradients are bitwise those of a run without checkpointing.
//
// With host_inputs (cpu_checkpointing) the kept inputs wait in host memory:
// copied down while the block runs forward, copied back before it is
// recomputed. On the device they pass through two slots, used alternately by
// even and odd blocks, so a block's input and output never share one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

class DecoderBlock;
class ExecutionContext;

struct CheckpointPlan {
  std::vector<bool> blocks;  // per layer: keeps only its input, recomputes in backward
  bool host_inputs = false;  // cpu_checkpointing
  bool synchronize = false;  // synchronize_checkpoint_boundary
  bool profile = false;      // time the checkpointed blocks

  bool checkpointed(int layer) const {
    return layer >= 0 && size_t(layer) < blocks.size() && blocks[size_t(layer)];
  }
  bool any() const { return count() > 0; }
  int count() const;
  // Block `layer`'s input waits in host memory (and passes through a device slot).
  bool input_on_host(int layer) const { return host_inputs && checkpointed(layer); }

  friend bool operator==(const CheckpointPlan&, const CheckpointPlan&) = default;
};

// The plan a config asks for: blocks 0, k, 2k, ... for every = k.
CheckpointPlan checkpoint_plan(const Config& cfg);

// The activation-layout entry that holds block `layer`'s input (layer n_layer:
// ln_f's): "embedding.out", "h.<layer-1>.residual_out", or the device slot
// "checkpoint.slot.<layer % 2>" when the input waits in host memory.
std::string block_input_entry(const CheckpointPlan& plan, int layer);

// Time spent in checkpointed blocks since the last take (profile: true).
struct CheckpointTimes {
  int64_t forward_ns = 0;
  int64_t recompute_ns = 0;
  int64_t backward_ns = 0;
  int64_t blocks = 0;  // checkpointed block forwards counted
};

// Runs a checkpointed block: its forward (sending the input to host memory),
// and in backward the input's way back, the recomputation and the block's own
// backward, with the boundaries synchronized and timed as the plan asks.
class CheckpointRunner {
 public:
  void set_plan(const CheckpointPlan& plan) { plan_ = plan; }
  const CheckpointPlan& plan() const { return plan_; }

  void forward(ExecutionContext& ctx, DecoderBlock& b);
  void backward(ExecutionContext& ctx, DecoderBlock& b);
  CheckpointTimes take_times();

 private:
  void boundary(ExecutionContext& ctx) const;
  int64_t now(ExecutionContext& ctx) const;

  CheckpointPlan plan_;
  CheckpointTimes times_;
};

}  // namespace hybrid::engine
