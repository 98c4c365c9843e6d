// The Engine's lines on stdout: where the offloaded state lives, what the LR
// schedule does to the optimizer, which blocks are checkpointed and their times.
#include <fmt/format.h>

#include "base/units.h"
#include "engine/engine.h"

namespace hybrid {

using namespace engine;

void Engine::describe_offload() {
  const auto& z = cfg_.zero;
  const bool nvme_used =
      z.offload_optimizer.device == OffloadDevice::nvme ||
      (zero_->params_offloaded() && z.offload_param.device == OffloadDevice::nvme);
  if (zero_->optimizer_offloaded()) describe_optimizer_offload();
  if (zero_->params_offloaded()) describe_param_offload();
  if (nvme_used && (cfg_.aio.single_submit || !cfg_.aio.overlap_events) &&
      !io::io_uring_available())
    log("aio.single_submit / aio.overlap_events: they shape io_uring's submissions, and this build "
        "has no io_uring engine (liburing not found): no effect");
}

std::string Engine::host_memory_kind() const {
  return fmt::format("{} host memory",
                     runtime_.host_allocator().pinned() ? "page-locked" : "pageable");
}

void Engine::describe_optimizer_offload() {
  const auto& o = cfg_.zero.offload_optimizer;
  const auto host = runtime_.host_allocator().stats();
  const auto nvme = zero_->nvme_bytes();
  const bool on_nvme = o.device == OffloadDevice::nvme;
  const auto& kept_in = on_nvme ? nvme : host.current;
  const uint64_t kept =
      kept_in[size_t(MemCategory::master)] + kept_in[size_t(MemCategory::optimizer)];
  const std::string where =
      on_nvme ? fmt::format(
                    "NVMe swap files under {} (aio: block {}, queue depth {}, {} thread(s), "
                    "{} engine)",
                    o.nvme_path, base::format_bytes(cfg_.aio.block_size), cfg_.aio.queue_depth,
                    cfg_.aio.thread_count, io::to_string(io::choose_io_engine(cfg_.aio)))
              : host_memory_kind();
  std::string line = fmt::format(
      "zero_optimization.offload_optimizer: fp32 master weights and {} state of this rank's "
      "partition ({}) live in {}; {} runs on the CPU, gradients go down and parameters up each "
      "step",
      optimizer_->name(), base::format_bytes(kept), where, optimizer_->name());
  if (runtime_.on_cpu())
    line +=
        " (CPU backend: host-to-host copies, identical results; the memory budget no longer counts "
        "them)";
  log(line);
}

void Engine::describe_param_offload() {
  const auto& o = cfg_.zero.offload_param;
  const bool on_nvme = o.device == OffloadDevice::nvme;
  const uint64_t bytes =
      on_nvme ? zero_->nvme_bytes()[size_t(MemCategory::params)]
              : runtime_.host_allocator().stats().current[size_t(MemCategory::params)];
  log(fmt::format(
      "zero_optimization.offload_param: this rank's partition of {} parameters ({}) lives in {}; "
      "each module's slice is fetched before its all-gather{}",
      kernels::dtype_name(cfg_.param_dtype()), base::format_bytes(bytes),
      on_nvme ? fmt::format("an NVMe swap file under {}", o.nvme_path) : host_memory_kind(),
      zero_->optimizer_offloaded()
          ? ""
          : "; the optimizer runs on the device and writes the updated partition back each step"));
}

// What the schedule does to the optimizer beyond the lr, said once.
void Engine::describe_schedule() {
  const auto& s = cfg_.scheduler;
  if (s.type != "OneCycle") return;
  if (s.cycle_momentum && cfg_.optimizer.type == "SGD")
    log("scheduler OneCycle: cycle_momentum has no effect with SGD (DeepSpeed cycles only an "
        "optimizer's betas and disables it for optimizers without them); momentum stays " +
        fmt::format("{:g}", cfg_.optimizer.momentum));
  else if (s.cycle_momentum)
    log(fmt::format(
        "scheduler OneCycle: beta1 cycles between {:g} and {:g} (inversely to the lr) and beta2 "
        "is 0.99, as DeepSpeed's cycle_momentum sets them; optimizer.params.betas is replaced",
        s.cycle_min_mom, s.cycle_max_mom));
}

void Engine::describe_checkpointing() {
  const CheckpointPlan& plan = model_->checkpoint_plan();
  if (!plan.any()) return;
  std::string blocks;
  for (int l = 0; l < cfg_.model.n_layer; ++l)
    if (plan.checkpointed(l)) blocks += (blocks.empty() ? "" : ", ") + std::to_string(l);
  log(fmt::format(
      "activation_checkpointing: {} of {} blocks (h.{{{}}}) keep only their input{} and recompute "
      "their forward in backward; activations {} on the device{}",
      plan.count(), cfg_.model.n_layer, blocks, plan.host_inputs ? " in host memory" : "",
      base::format_bytes(allocator().stats().current[size_t(MemCategory::activations)]),
      plan.synchronize ? ", device synchronized at each checkpoint boundary" : ""));
}

void Engine::log_checkpoint_times() {
  checkpoint_times_ = model_->take_checkpoint_times();
  if (!model_->checkpoint_plan().profile) return;
  const auto& t = checkpoint_times_;
  log(fmt::format(
      "activation_checkpointing.profile: step {}: {} checkpointed block forwards {:.3f} ms, "
      "recomputation {:.3f} ms, their backward {:.3f} ms",
      progress_.global_step, t.blocks, double(t.forward_ns) / 1e6, double(t.recompute_ns) / 1e6,
      double(t.backward_ns) / 1e6));
}

}  // namespace hybrid
