// The device runtime's devices, communicators and GPU profiling; its topology
// and groups are engine/runtime/device_groups.cpp.
#include "engine/runtime/device_runtime.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "base/launcher_env.h"
#include "engine/comm/factory.h"
#include "engine/comm/nccl_communicator.h"
#include "kernels/registry.h"

namespace hybrid::engine {

namespace {

// OpenMP threads per rank: the configured number, else the user's OMP_NUM_THREADS,
// else the cores shared evenly among the ranks of this host (oversubscribing cores
// only slows everyone).
int threads_per_rank(const Config& cfg, const base::LauncherEnv& env) {
  if (cfg.threads > 0) return cfg.threads;
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp && std::atoi(omp) > 0)
    return std::atoi(omp);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, env.local_size));
}

// The ZeRO runtime reports each blocking wait here; the comm tracer books it
// against the step it started in (exposed communication).
class TracerWaits final : public CommWaitRecorder {
 public:
  explicit TracerWaits(profiler::CommTracer& t) : t_(t) {}
  void record_wait(int64_t start_ns, int64_t end_ns) override {
    t_.record_wait(start_ns, end_ns, t_.step_at(start_ns));
  }

 private:
  profiler::CommTracer& t_;
};

// NCCL for the device buffers of a CUDA backend, its ncclUniqueId broadcast over
// the host communicator (whose own thread does the MPI call, as
// MPI_THREAD_SERIALIZED requires). Also for one rank: the single-process
// communicator copies with memmove, which cannot touch device memory.
std::unique_ptr<comm::Communicator> make_nccl_for(kernels::Backend& backend,
                                                  comm::Communicator& host,
                                                  std::function<int64_t()> clock) {
  comm::NcclOptions o;
  o.device = backend.device_index();
  o.compute_stream = backend.compute_stream_handle();
  o.comm_stream = backend.comm_stream_handle();
  o.clock = std::move(clock);
  o.rank = host.rank();
  o.world_size = host.world_size();
  o.bootstrap_broadcast = [&host](void* data, size_t bytes) { host.broadcast(data, bytes, 0); };
  o.placement = host.placement();
  return comm::make_nccl_communicator(std::move(o));
}

profiler::CommTracerOptions comm_tracer_options(const Config& cfg) {
  profiler::CommTracerOptions o;
  o.verbose = cfg.comms_logger.enabled && cfg.comms_logger.verbose;
  o.prof_all = cfg.comms_logger.prof_all;
  o.prof_ops = cfg.comms_logger.prof_ops;
  return o;
}

}  // namespace

// Forwards tracer scopes to the CUPTI collector of the moment (only profiled
// steps have one), so the tracer's listener list never changes.
class DeviceRuntime::CollectorSlot final : public profiler::RangeListener {
 public:
  void set(profiler::RangeListener* target) { target_ = target; }
  void on_begin(std::string_view name, profiler::Category category, int32_t module_id) override {
    if (target_) target_->on_begin(name, category, module_id);
  }
  void on_end(profiler::Category category, int32_t module_id) override {
    if (target_) target_->on_end(category, module_id);
  }

 private:
  profiler::RangeListener* target_ = nullptr;
};

DeviceRuntime::DeviceRuntime(const Config& cfg, std::unique_ptr<kernels::Backend> backend,
                             std::unique_ptr<comm::Communicator> host_comm,
                             std::unique_ptr<comm::Communicator> device_comm, bool quiet)
    : quiet_(quiet) {
  make_backends(cfg, std::move(backend));
  setup_communicators(cfg, std::move(host_comm), std::move(device_comm));
  if (!backend_->supports(cfg.param_dtype()))
    throw ConfigError(fmt::format("config: dtype {} is not supported by the {} backend",
                                  kernels::dtype_name(cfg.param_dtype()), backend_->name()));
  if (!backend_note_.empty()) log(backend_note_);
  setup_gpu_profiling();
  alloc_ = std::make_unique<TrackingAllocator>(*backend_, cfg.memory_budget);
  const bool pin = cfg.zero.offload_optimizer.pin_memory || cfg.zero.offload_param.pin_memory;
  host_alloc_ =
      std::make_unique<TrackingAllocator>(*host_backend_, pin ? *backend_ : *host_backend_, 0);
  setup_topology(cfg.parallel);
}

DeviceRuntime::~DeviceRuntime() = default;

void DeviceRuntime::make_backends(const Config& cfg, std::unique_ptr<kernels::Backend> backend) {
  const base::LauncherEnv env = base::launcher_env();
  omp_set_num_threads(threads_per_rank(cfg, env));
  if (backend) {
    backend_ = std::move(backend);
  } else {
    auto choice = kernels::make_backend(to_string(cfg.device), env.local_rank);
    backend_ = std::move(choice.backend);
    backend_note_ = choice.note;
  }
  if (on_cpu()) {
    host_backend_ = backend_.get();
  } else {
    host_backend_owned_ = kernels::make_cpu_backend();
    host_backend_ = host_backend_owned_.get();
  }
}

std::function<void()> DeviceRuntime::device_sync() {
  // On an asynchronous device the timers wait for it, so that they measure work done.
  if (!on_cuda()) return {};
  return [this] { backend_->synchronize(); };
}

void DeviceRuntime::log(const std::string& line) const {
  if (!quiet_ && host_comm_->rank() == 0) std::printf("%s\n", line.c_str());
}

void DeviceRuntime::setup_communicators(const Config& cfg, std::unique_ptr<comm::Communicator> host,
                                        std::unique_ptr<comm::Communicator> device) {
  auto clock = [this] { return tracer_.now_ns(); };
  comm_tracer_ = std::make_unique<profiler::CommTracer>(comm_tracer_options(cfg), &tracer_);
  waits_ = std::make_unique<TracerWaits>(*comm_tracer_);
  host_comm_ = host ? std::move(host) : comm::make_communicator(clock);
  tracer_.set_rank(host_comm_->rank());
  if (device)
    device_comm_owned_ = std::move(device);
  else if (on_cuda())
    device_comm_owned_ = make_nccl_for(*backend_, *host_comm_, clock);
  device_comm_ = device_comm_owned_ ? device_comm_owned_.get() : host_comm_.get();
  if (device_comm_->world_size() != host_comm_->world_size() ||
      device_comm_->rank() != host_comm_->rank())
    throw std::invalid_argument(
        fmt::format("engine: the device communicator ({}, rank {} of {}) and the host communicator "
                    "({}, rank {} of {}) "
                    "disagree",
                    device_comm_->name(), device_comm_->rank(), device_comm_->world_size(),
                    host_comm_->name(), host_comm_->rank(), host_comm_->world_size()));
  host_comm_->set_observer(comm_tracer_->observer());
  if (host_comm_->world_size() > 1)
    log(fmt::format("ranks: {}; {} thread(s) per rank", host_comm_->placement().describe(),
                    omp_get_max_threads()));
  if (device_comm_ == host_comm_.get()) return;
  device_comm_->set_observer(comm_tracer_->observer());
  log(fmt::format("communication: {} for gradients and parameters, {} for host values ({} rank(s))",
                  device_comm_->name(), host_comm_->name(), host_comm_->world_size()));
}

void DeviceRuntime::setup_gpu_profiling() {
  if (!on_cuda()) return;  // CPU: no listeners at all
  nvtx_ = profiler::make_nvtx_listener();
  if (nvtx_) tracer_.add_listener(nvtx_.get());
  cupti_slot_ = std::make_unique<CollectorSlot>();
  tracer_.add_listener(cupti_slot_.get());
}

void DeviceRuntime::update_gpu_collection() {
  if (!cupti_slot_) return;
  if (tracer_.enabled() && !cupti_) {
    cupti_ = profiler::make_cupti_collector(tracer_);
    cupti_slot_->set(cupti_.get());
    if (!cupti_status_logged_) log(cupti_->status());
    cupti_status_logged_ = true;
  } else if (!tracer_.enabled() && cupti_) {
    flush_gpu_activity();  // the profiled window is over
  }
}

size_t DeviceRuntime::flush_gpu_activity() {
  if (!cupti_) return 0;
  backend_->synchronize();  // every kernel of the profiled steps has finished
  const size_t n = cupti_->flush(true);
  cupti_slot_->set(nullptr);
  cupti_.reset();  // disables CUPTI until the next profiled step
  return n;
}

}  // namespace hybrid::engine
