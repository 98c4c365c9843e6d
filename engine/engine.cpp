#include "engine/engine.h"

#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <tuple>

#include "base/launcher_env.h"
#include "base/units.h"
#include "engine/comm/factory.h"
#include "engine/comm/nccl_communicator.h"
#include "engine/cpu_gemm.h"
#include "engine/memory_model.h"
#include "engine/model/registry.h"
#include "kernels/registry.h"

namespace hybrid {

using namespace engine;
using kernels::DType;

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

// Where each parameter tensor starts in the flat space, then the count: the
// segments of a per-tensor optimizer (Lamb).
std::vector<int64_t> tensor_starts(const ModuleTree& tree) {
  std::vector<int64_t> starts;
  for (const ParamSpec* p : tree.params()) starts.push_back(p->offset);
  starts.push_back(tree.param_count());
  return starts;
}

profiler::CommTracerOptions comm_tracer_options(const Config& cfg) {
  profiler::CommTracerOptions o;
  o.verbose = cfg.comms_logger.enabled && cfg.comms_logger.verbose;
  o.prof_all = cfg.comms_logger.prof_all;
  o.prof_ops = cfg.comms_logger.prof_ops;
  return o;
}

}  // namespace

std::unique_ptr<CausalLM> make_model(const Config& cfg) {
  return engine::make_model(cfg.model, cfg.padded_vocab());
}

// Forwards tracer scopes to the CUPTI collector of the moment (only profiled
// steps have one), so the tracer's listener list never changes.
class Engine::CollectorSlot final : public profiler::RangeListener {
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

Engine::Engine(const Config& cfg, std::unique_ptr<CausalLM> model, EngineOptions opts)
    : cfg_(cfg), quiet_(opts.quiet) {
  const base::LauncherEnv env = base::launcher_env();
  omp_set_num_threads(threads_per_rank(cfg, env));
  if (opts.backend) {
    backend_ = std::move(opts.backend);
  } else {
    auto choice = kernels::make_backend(to_string(cfg.device), env.local_rank);
    backend_ = std::move(choice.backend);
    backend_note_ = choice.note;
  }
  if (backend_->kind() == kernels::BackendKind::cpu) {
    host_backend_ = backend_.get();
  } else {
    host_backend_owned_ = kernels::make_cpu_backend();
    host_backend_ = host_backend_owned_.get();
  }
  setup_communicators(opts);
  // On an asynchronous device the timers wait for it, so that they measure work done.
  timers_ = StepTimerSet(cfg.wall_clock_breakdown,
                         backend_->kind() == kernels::BackendKind::cuda
                             ? std::function<void()>([this] { backend_->synchronize(); })
                             : std::function<void()>());
  optimizer_name_ = tracer_.intern("optimizer");
  if (!backend_->supports(cfg.param_dtype()))
    throw ConfigError(fmt::format("config: dtype {} is not supported by the {} backend",
                                  kernels::dtype_name(cfg.param_dtype()), backend_->name()));
  if (!backend_note_.empty()) log(backend_note_);
  setup_gpu_profiling();

  alloc_ = std::make_unique<TrackingAllocator>(*backend_, cfg.memory_budget);
  // Host memory: page-locked from the device backend when pin_memory asks for it
  // (either offload block: they share one host allocator).
  const bool pin = cfg.zero.offload_optimizer.pin_memory || cfg.zero.offload_param.pin_memory;
  host_alloc_ =
      std::make_unique<TrackingAllocator>(*host_backend_, pin ? *backend_ : *host_backend_, 0);
  const bool offload = cfg.zero.offload_optimizer.device != OffloadDevice::none ||
                       cfg.zero.offload_param.device != OffloadDevice::none;
  model_ = std::move(model);
  setup_topology();
  // Cheap checks first: a config far over its budget fails here by name, not in
  // the GEMM measurement or an allocation of its huge shapes.
  check_memory_budget(cfg, world_size(), pipeline_stage(), *backend_);
  tree_ = std::make_unique<ModuleTree>(*model_);
  if (backend_->kind() == kernels::BackendKind::cpu) {
    auto gemm = setup_cpu_gemm(cfg, *tree_, host_comm_->rank(),
                               [this](int64_t v) { return broadcast_from_rank0(v); });
    for (const auto& note : gemm.notes) log(note);
    gemm_report_ = std::move(gemm.report);
  }
  optimizer_ = opts.optimizer ? std::move(opts.optimizer)
                              : make_optimizer(cfg.optimizer, tensor_starts(*tree_));
  scaler_ = cfg.fp16.enabled ? LossScaler(cfg.fp16) : LossScaler();
  schedule_ = std::make_unique<LrSchedule>(cfg.scheduler, cfg.optimizer.lr);

  auto clock = [this] { return tracer_.now_ns(); };
  zero_ = std::make_unique<ZeroRuntime>(zero_setup(cfg), *tree_, *zero_comm_, *zero_host_comm_,
                                        *alloc_, offload ? host_alloc_.get() : nullptr,
                                        optimizer_->state_floats_per_param(), waits_.get(), clock,
                                        comm_tracer_->io_observer());
  describe_offload();
  describe_schedule();
  const auto dt = cfg.param_dtype();
  const int slots =  // a stage's micro-batches in flight
      in_flight_micro_batches(pipeline_stage(), pipeline_stages(), cfg.gradient_accumulation_steps);
  model_->bind(*alloc_, cfg.train_micro_batch_size_per_gpu, cfg.seq_len(), dt, checkpoint_plan(cfg),
               host_alloc_.get(), slots);
  describe_checkpointing();
  ctx_ = std::make_unique<ExecutionContext>(*backend_, dt, cfg.train_micro_batch_size_per_gpu,
                                            cfg.seq_len());
  ctx_->set_param_access(zero_.get());
  ctx_->set_hooks(zero_.get());
  if (topology_ && topology_->tp() > 1)
    ctx_->set_tensor_parallel(
        groups_.tp.get(), [this](int64_t start, int64_t end) { waits_->record_wait(start, end); });
  ctx_->set_tracer(&tracer_, tree_->modules());
  ctx_->set_batch(model_->tokens_buffer(), model_->targets_buffer());

  const auto init = model_->initial_parameters(*tree_, cfg.seed);
  set_parameters(init);
}

Engine::~Engine() = default;

void Engine::log(const std::string& line) const {
  if (!quiet_ && host_comm_->rank() == 0) std::printf("%s\n", line.c_str());
}

void Engine::setup_communicators(EngineOptions& opts) {
  auto clock = [this] { return tracer_.now_ns(); };
  comm_tracer_ = std::make_unique<profiler::CommTracer>(comm_tracer_options(cfg_), &tracer_);
  waits_ = std::make_unique<TracerWaits>(*comm_tracer_);
  host_comm_ = opts.communicator ? std::move(opts.communicator) : comm::make_communicator(clock);
  tracer_.set_rank(host_comm_->rank());
  if (opts.device_communicator) {
    device_comm_owned_ = std::move(opts.device_communicator);
  } else if (backend_->kind() == kernels::BackendKind::cuda) {
    device_comm_owned_ = make_nccl_for(*backend_, *host_comm_, clock);
  }
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

void Engine::setup_gpu_profiling() {
  if (backend_->kind() != kernels::BackendKind::cuda) return;  // CPU: no listeners at all
  nvtx_ = profiler::make_nvtx_listener();
  if (nvtx_) tracer_.add_listener(nvtx_.get());
  cupti_slot_ = std::make_unique<CollectorSlot>();
  tracer_.add_listener(cupti_slot_.get());
}

void Engine::update_gpu_collection() {
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

size_t Engine::flush_gpu_activity() {
  if (!cupti_) return 0;
  backend_->synchronize();  // every kernel of the profiled steps has finished
  const size_t n = cupti_->flush(true);
  cupti_slot_->set(nullptr);
  cupti_.reset();  // disables CUPTI until the next profiled step
  return n;
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
      base::format_bytes(alloc_->stats().current[size_t(MemCategory::activations)]),
      plan.synchronize ? ", device synchronized at each checkpoint boundary" : ""));
}

void Engine::log_checkpoint_times() {
  checkpoint_times_ = model_->take_checkpoint_times();
  if (!model_->checkpoint_plan().profile) return;
  const auto& t = checkpoint_times_;
  log(fmt::format(
      "activation_checkpointing.profile: step {}: {} checkpointed block forwards {:.3f} ms, "
      "recomputation {:.3f} ms, their backward {:.3f} ms",
      global_step_, t.blocks, double(t.forward_ns) / 1e6, double(t.recompute_ns) / 1e6,
      double(t.backward_ns) / 1e6));
}

double Engine::mean_over_ranks(double v) {
  if (host_comm_->world_size() == 1) return v;
  float f = float(v);
  host_comm_->all_reduce(&f, 1, DType::f32, comm::ReduceOp::sum);
  return double(f) / host_comm_->world_size();
}

int64_t Engine::broadcast_from_rank0(int64_t v) {
  if (host_comm_->world_size() == 1) return v;
  host_comm_->broadcast(&v, sizeof v, 0);
  return v;
}

std::vector<float> Engine::all_gather_floats(const std::vector<float>& mine) {
  const size_t n = mine.size(), W = size_t(host_comm_->world_size());
  std::vector<float> all(n * W);
  float* slot = all.data() + n * size_t(host_comm_->rank());
  std::copy(mine.begin(), mine.end(), slot);
  host_comm_->all_gather(slot, all.data(), std::vector<size_t>(W, n), DType::f32);
  return all;
}

comm::Communicator::Counters Engine::comm_counters() const {
  comm::Communicator::Counters sum;
  for (const auto& [group, c] : comm_counters_by_group())
    for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
      sum.calls[k] += c.calls[k], sum.bytes[k] += c.bytes[k];
  return sum;
}

float Engine::current_lr() const { return schedule_->lr_for_update(applied_steps_); }

// Steps are numbered from 1 everywhere (logs, store, traces): the step being run.
void Engine::begin_step() {
  tracer_.set_step(int32_t(global_step_ + 1));
  comm_tracer_->begin_step(int32_t(global_step_ + 1));
  update_gpu_collection();
  timers_.reset();
}

float Engine::forward(const int32_t* inputs, const int32_t* targets) {
  if (pipeline_stages() > 1)
    throw std::logic_error("engine: with pipeline stages, use train_batch()");
  if (micro_step_ == 0) begin_step();
  return float(micro_forward(inputs, targets));
}

void Engine::backward() {
  if (pipeline_stages() > 1)
    throw std::logic_error("engine: with pipeline stages, use train_batch()");
  micro_backward(micro_step_ == cfg_.gradient_accumulation_steps - 1);
}

double Engine::micro_forward(const int32_t* inputs, const int32_t* targets) {
  const auto timer = timers_.time(StepTimer::forward);
  const size_t n = size_t(ctx_->B()) * size_t(ctx_->T());
  if (model_->first_stage())
    backend_->copy_from_host(model_->tokens_buffer(), inputs, n * sizeof(int32_t));
  if (model_->last_stage())
    backend_->copy_from_host(model_->targets_buffer(), targets, n * sizeof(int32_t));
  ctx_->forward(*model_);
  zero_->end_forward();
  if (!model_->last_stage()) return 0.0;
  host_losses_.resize(n);
  backend_->copy_to_host(host_losses_.data(), model_->losses(), n * sizeof(float));
  double sum = 0.0;
  for (float l : host_losses_) sum += l;
  return sum / double(n);
}

void Engine::micro_backward(bool boundary) {
  const auto timer = timers_.time(StepTimer::backward);
  const int gas = cfg_.gradient_accumulation_steps;
  const double tokens = double(ctx_->B()) * ctx_->T();
  ctx_->set_dloss(float(double(scaler_.scale()) / (tokens * gas)));
  {
    const auto inner = timers_.time(StepTimer::backward_inner);
    zero_->begin_backward(cfg_.zero.stage >= 2 || boundary);
    ctx_->backward(*model_);
  }
  const auto allreduce = timers_.time(StepTimer::backward_allreduce);
  zero_->end_backward();
  // At the boundary nothing runs between backward and the optimizer step: wait for
  // the reductions here, as DeepSpeed's backward does (its backward_allreduce).
  if (boundary) zero_->finish_reductions();
}

bool Engine::step() {
  if (++micro_step_ < cfg_.gradient_accumulation_steps) return false;
  micro_step_ = 0;
  {
    const auto timer = timers_.time(StepTimer::step);
    take_optimizer_step();
  }
  last_times_ = timers_.times();
  return true;
}

void Engine::take_optimizer_step() {
  profiler::Scope scope(&tracer_, optimizer_name_, profiler::Category::optimizer);
  const float scale = scaler_.scale();
  last_ = StepStats{};
  last_.loss_scale = scale;
  GradSummary g;
  {
    const auto timer = timers_.time(StepTimer::optimizer_gradients);
    g = gradient_summary();
  }
  ++global_step_;
  last_.step = global_step_;
  log_checkpoint_times();
  if (g.overflow) {
    // DeepSpeed skips the update and does not advance the LR schedule.
    zero_->zero_grads();
    scaler_.update(true);
    ++skipped_steps_;
    last_.skipped = true;
    last_.lr = current_lr();
    return;
  }
  const double ranks = double(zero_comm_->world_size());  // data-parallel ranks summed gradients
  const double norm = std::sqrt(g.sum_squares) / (ranks * scale);
  double combined = ranks * scale;  // divides out the loss scale and the rank sum
  if (cfg_.gradient_clipping > 0.0f) {
    const double ratio = (norm + 1e-6) / cfg_.gradient_clipping;
    if (ratio > 1.0) combined *= ratio;
  }
  last_.grad_norm = float(norm);
  last_.lr = current_lr();
  OptimizerStepArgs args;
  args.lr = last_.lr;
  if (const auto betas = schedule_->betas_for_update(applied_steps_))
    std::tie(args.beta1, args.beta2) = *betas;
  args.step = ++applied_steps_;
  args.grad_scale = float(1.0 / combined);
  {
    const auto timer = timers_.time(StepTimer::optimizer_step);
    zero_->apply_optimizer(*optimizer_, args);
  }
  if (cfg_.zero.stage == 0) {
    zero_->sync_working_params();  // every rank updated everything: nothing to gather
  } else {
    const auto timer = timers_.time(StepTimer::optimizer_allgather);
    zero_->sync_working_params();
  }
  zero_->zero_grads();
  scaler_.update(false);
}

std::unique_ptr<Engine> initialize(const Config& cfg, std::unique_ptr<CausalLM> model,
                                   EngineOptions opts) {
  return std::make_unique<Engine>(cfg, std::move(model), std::move(opts));
}

}  // namespace hybrid
