#include "engine/model/activation_checkpointing.h"

#include <chrono>

#include "engine/model/causal_lm.h"
#include "engine/model/execution_context.h"

namespace hybrid::engine {

int CheckpointPlan::count() const {
  int n = 0;
  for (bool b : blocks) n += b ? 1 : 0;
  return n;
}

CheckpointPlan checkpoint_plan(const Config& cfg) {
  const auto& a = cfg.activation_checkpointing;
  CheckpointPlan p;
  p.blocks.assign(size_t(cfg.model.n_layer), false);
  if (a.every <= 0) return p;
  for (int l = 0; l < cfg.model.n_layer; l += a.every) p.blocks[size_t(l)] = true;
  p.host_inputs = a.cpu_checkpointing;
  p.synchronize = a.synchronize_checkpoint_boundary;
  p.profile = a.profile;
  return p;
}

std::string block_input_entry(const CheckpointPlan& plan, int layer) {
  if (plan.input_on_host(layer)) return "checkpoint.slot." + std::to_string(layer % 2);
  if (layer == 0) return "embedding.out";
  return "h." + std::to_string(layer - 1) + ".residual_out";
}

void CheckpointRunner::boundary(ExecutionContext& ctx) const {
  if (plan_.synchronize) ctx.backend().synchronize();
}

// With profile on, the clock is read after the device caught up (DeepSpeed's
// checkpoint timers synchronize as well).
int64_t CheckpointRunner::now(ExecutionContext& ctx) const {
  if (!plan_.profile) return 0;
  ctx.backend().synchronize();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void CheckpointRunner::forward(ExecutionContext& ctx, DecoderBlock& b) {
  auto& be = ctx.backend();
  boundary(ctx);
  const int64_t t0 = now(ctx);
  uint64_t ticket = 0;
  if (b.host_input) ticket = be.copy_to_host_async(b.host_input, b.residual_in, b.stream_bytes);
  ctx.forward(b);
  be.wait_transfer(ticket);  // the slot is written again two blocks on
  boundary(ctx);
  times_.forward_ns += now(ctx) - t0;
  ++times_.blocks;
}

void CheckpointRunner::backward(ExecutionContext& ctx, DecoderBlock& b) {
  auto& be = ctx.backend();
  boundary(ctx);
  const int64_t t0 = now(ctx);
  uint64_t ticket = 0;
  if (b.host_input)  // work queued after the copy sees the data
    ticket = be.copy_from_host_async(b.input_slot, b.host_input, b.stream_bytes);
  ctx.recompute(b);
  const int64_t t1 = now(ctx);
  ctx.backward(b);
  be.wait_transfer(ticket);
  boundary(ctx);
  const int64_t t2 = now(ctx);
  times_.recompute_ns += t1 - t0;
  times_.backward_ns += t2 - t1;
}

CheckpointTimes CheckpointRunner::take_times() {
  CheckpointTimes t = times_;
  times_ = {};
  return t;
}

}  // namespace hybrid::engine
