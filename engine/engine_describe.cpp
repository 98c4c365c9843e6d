// The Engine's one-time descriptions of where the offloaded state lives.
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
  return fmt::format("{} host memory", host_alloc_->pinned() ? "page-locked" : "pageable");
}

void Engine::describe_optimizer_offload() {
  const auto& o = cfg_.zero.offload_optimizer;
  const auto host = host_alloc_->stats();
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
  if (backend_->kind() == kernels::BackendKind::cpu)
    line +=
        " (CPU backend: host-to-host copies, identical results; the memory budget no longer counts "
        "them)";
  log(line);
}

void Engine::describe_param_offload() {
  const auto& o = cfg_.zero.offload_param;
  const bool on_nvme = o.device == OffloadDevice::nvme;
  const uint64_t bytes = on_nvme ? zero_->nvme_bytes()[size_t(MemCategory::params)]
                                 : host_alloc_->stats().current[size_t(MemCategory::params)];
  log(fmt::format(
      "zero_optimization.offload_param: this rank's partition of {} parameters ({}) lives in {}; "
      "each module's slice is fetched before its all-gather{}",
      kernels::dtype_name(cfg_.param_dtype()), base::format_bytes(bytes),
      on_nvme ? fmt::format("an NVMe swap file under {}", o.nvme_path) : host_memory_kind(),
      zero_->optimizer_offloaded()
          ? ""
          : "; the optimizer runs on the device and writes the updated partition back each step"));
}

}  // namespace hybrid
