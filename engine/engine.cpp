// The Engine: its construction from the rooms (engine/runtime/) and the step
// every path runs (forward/backward/step, train_batch, the optimizer step).
#include "engine/engine.h"

#include <fmt/format.h>

#include <cmath>
#include <tuple>

#include "engine/checkpoint/checkpoint.h"
#include "engine/cpu_gemm.h"
#include "engine/inference_replica.h"
#include "engine/memory_model.h"
#include "engine/model/registry.h"
#include "engine/optim/compression_errors.h"

namespace hybrid {

using namespace engine;

namespace {

// The padded vocabulary's rows of every [padded_vocab, C] parameter (the
// embedding, an untied output projection): no token or logit reaches them.
ZeroGradientRanges padded_vocabulary_rows(const ModuleTree& tree, int vocab, int padded) {
  ZeroGradientRanges ranges;
  if (padded <= vocab) return ranges;
  for (const ParamSpec* p : tree.params())
    if (p->shape.size() == 2 && p->shape[0] == padded)
      ranges.emplace_back(p->offset + int64_t(vocab) * p->shape[1],
                          p->offset + int64_t(padded) * p->shape[1]);
  return ranges;
}

std::unique_ptr<Optimizer> default_optimizer(const Config& cfg, const ModuleTree& tree,
                                             DeviceRuntime& runtime) {
  auto opt = make_optimizer(cfg.optimizer, tensor_starts(tree), &runtime.zero_comm(),
                            padded_vocabulary_rows(tree, cfg.model.vocab_size, cfg.padded_vocab()));
  // The 1-bit optimizers' error feedback in the device memory the model predicts.
  if (auto* errors = dynamic_cast<TracksCompressionErrors*>(opt.get()))
    errors->track_errors_in(runtime.allocator());
  return opt;
}

}  // namespace

std::unique_ptr<CausalLM> make_model(const Config& cfg) {
  return engine::make_model(cfg.model, cfg.padded_vocab());
}

Engine::Engine(const Config& cfg, std::unique_ptr<CausalLM> model, EngineOptions opts)
    : cfg_(cfg),
      runtime_(cfg, std::move(opts.backend), std::move(opts.communicator),
               std::move(opts.device_communicator), opts.quiet),
      model_(std::move(model)) {
  timers_ = StepTimerSet(cfg.wall_clock_breakdown, runtime_.device_sync());
  optimizer_name_ = tracer().intern("optimizer");
  place_model();
  // Cheap checks first: a config far over its budget fails here by name, not in
  // the GEMM measurement or an allocation of its huge shapes.
  check_memory_budget(cfg, world_size(), pipeline_stage(), backend());
  tree_ = std::make_unique<ModuleTree>(*model_);
  if (runtime_.on_cpu()) {
    auto gemm =
        setup_cpu_gemm(cfg, *tree_, rank(), [this](int64_t v) { return broadcast_from_rank0(v); });
    for (const auto& note : gemm.notes) log(note);
    gemm_report_ = std::move(gemm.report);
  }
  optimizer_ =
      opts.optimizer ? std::move(opts.optimizer) : default_optimizer(cfg, *tree_, runtime_);
  setup_training();
  setup_context();
  checkpoint_ = std::make_unique<CheckpointIO>(cfg_, runtime_, *model_, *tree_, *optimizer_, *zero_,
                                               pipeline_.get());
  set_parameters(model_->initial_parameters(*tree_, cfg.seed));
}

Engine::~Engine() = default;

// Tensor parallelism changes the model's shapes, a pipeline its blocks.
void Engine::place_model() {
  if (const int tp = tensor_parallel_size(); tp > 1)
    model_->set_tensor_slice({tp, tensor_parallel_rank()});
  if (pipeline_stages() > 1) pipeline_ = std::make_unique<PipelineRunner>(cfg_, runtime_, *model_);
}

// The loss scaler, the LR schedule and ZeRO's buffers over this rank's flat space.
void Engine::setup_training() {
  scaler_ = cfg_.fp16.enabled ? LossScaler(cfg_.fp16) : LossScaler();
  schedule_ = std::make_unique<LrSchedule>(cfg_.scheduler, cfg_.optimizer.lr);
  const bool offload = cfg_.zero.offload_optimizer.device != OffloadDevice::none ||
                       cfg_.zero.offload_param.device != OffloadDevice::none;
  zero_ = std::make_unique<ZeroRuntime>(
      zero_setup(cfg_), *tree_, runtime_.zero_comm(), runtime_.zero_host_comm(), allocator(),
      offload ? &host_allocator() : nullptr, optimizer_->state_floats_per_param(),
      &runtime_.waits(), [this] { return tracer().now_ns(); }, comm_tracer().io_observer());
  describe_offload();
  describe_schedule();
}

// The model's activations (a stage's micro-batches in flight) and the context
// that runs its forward and backward.
void Engine::setup_context() {
  const auto dt = cfg_.param_dtype();
  const int B = cfg_.train_micro_batch_size_per_gpu, T = cfg_.seq_len();
  ctx_ = std::make_unique<ExecutionContext>(backend(), dt, B, T);
  bind_activations(B, T);
  describe_checkpointing();
  ctx_->set_param_access(zero_.get());
  ctx_->set_hooks(zero_.get());
  if (tensor_parallel_size() > 1)
    ctx_->set_tensor_parallel(
        &runtime_.group(ParallelAxis::tp),
        [this](int64_t start, int64_t end) { runtime_.waits().record_wait(start, end); });
  ctx_->set_tracer(&tracer(), tree_->modules());
}

void Engine::bind_activations(int B, int T) {
  const int slots = in_flight_micro_batches(pipeline_stage(), pipeline_stages(),
                                            cfg_.gradient_accumulation_steps);
  model_->bind(allocator(), B, T, cfg_.param_dtype(), checkpoint_plan(cfg_), &host_allocator(),
               slots);
  ctx_->set_shape(B, T);
  ctx_->set_batch(model_->tokens_buffer(), model_->targets_buffer());
}

std::string Engine::save_checkpoint(const std::string& dir, const std::string& tag,
                                    const CheckpointSaveOptions& options) {
  if (micro_step_ != 0)
    throw CheckpointError("checkpoint: save only at an accumulation boundary (after step())");
  return checkpoint_->save(dir, tag, options, progress_, scaler_);
}

std::string Engine::load_checkpoint(const std::string& dir, const std::string& tag) {
  const std::string loaded = checkpoint_->load(dir, tag, progress_, scaler_);
  optimizer_->state_loaded();
  optimizer_->load_scalar_state(progress_.optimizer_scalars);
  micro_step_ = 0;
  return loaded;
}

CheckpointOwner Engine::checkpoint_owner() const {
  return {model_identity(cfg_), progress_.lineage};
}

const Engine::PipelineTimes& Engine::last_pipeline_times() const {
  static const PipelineTimes none;
  return pipeline_ ? pipeline_->times() : none;
}

float Engine::current_lr() const {
  return float(double(schedule_->lr_for_update(progress_.applied_steps)) * lr_scale_);
}

// Steps are numbered from 1 everywhere (logs, store, traces): the step being run.
void Engine::begin_step() {
  const auto step = int32_t(progress_.global_step + 1);
  tracer().set_step(step);
  comm_tracer().begin_step(step);
  runtime_.update_gpu_collection();
  timers_.reset();
}

float Engine::forward(const int32_t* inputs, const int32_t* targets, const int32_t* positions) {
  if (pipeline_) throw std::logic_error("engine: with pipeline stages, use train_batch()");
  if (micro_step_ == 0) begin_step();
  forwarded_ = MicroBatch{inputs, targets, positions};
  return float(micro_forward(forwarded_));
}

void Engine::backward() {
  if (pipeline_) throw std::logic_error("engine: with pipeline stages, use train_batch()");
  micro_backward(forwarded_, micro_step_ == cfg_.gradient_accumulation_steps - 1);
}

bool Engine::step() {
  if (++micro_step_ < cfg_.gradient_accumulation_steps) return false;
  micro_step_ = 0;
  optimizer_step();
  return true;
}

double Engine::train_batch(const std::vector<const int32_t*>& inputs,
                           const std::vector<const int32_t*>& targets) {
  if (inputs.size() != targets.size())
    throw std::invalid_argument(
        fmt::format("train_batch: {} inputs and {} targets", inputs.size(), targets.size()));
  std::vector<MicroBatch> batches;
  for (size_t k = 0; k < inputs.size(); ++k) batches.push_back({inputs[k], targets[k], nullptr});
  return train_batch(batches);
}

double Engine::train_batch(const std::vector<MicroBatch>& batches) {
  const int gas = cfg_.gradient_accumulation_steps;
  if (int(batches.size()) != gas)
    throw std::invalid_argument(fmt::format(
        "train_batch: {} micro-batches for gradient_accumulation_steps {}", batches.size(), gas));
  if (!pipeline_) {
    double loss = 0.0;
    for (const MicroBatch& b : batches) {
      loss += forward(b.inputs, b.targets, b.positions);
      backward();
      step();
    }
    return loss / gas;
  }
  begin_step();
  const PipelineRunner::MicroSteps micro{
      [this](const MicroBatch& b) { return micro_forward(b); },
      [this](const MicroBatch& b, bool boundary) { micro_backward(b, boundary); }};
  const double loss = pipeline_->run(batches, *ctx_, micro);
  optimizer_step();
  return loss;
}

size_t Engine::copy_in(const MicroBatch& batch) {
  const size_t n = size_t(ctx_->B()) * size_t(ctx_->T());
  kernels::Backend& be = backend();
  if (model_->first_stage())
    be.copy_from_host(model_->tokens_buffer(), batch.inputs, n * sizeof(int32_t));
  if (model_->last_stage())
    be.copy_from_host(model_->targets_buffer(), batch.targets, n * sizeof(int32_t));
  if (batch.positions)  // every stage's attention reads them
    be.copy_from_host(model_->positions_buffer(), batch.positions, n * sizeof(int32_t));
  ctx_->set_batch(model_->tokens_buffer(), model_->targets_buffer(),
                  batch.positions ? model_->positions_buffer() : nullptr);
  return n;
}

double Engine::micro_forward(const MicroBatch& batch) {
  const auto timer = timers_.time(StepTimer::forward);
  const size_t n = copy_in(batch);
  ctx_->forward(*model_);
  zero_->end_forward();
  if (!model_->last_stage()) return 0.0;
  host_losses_.resize(n);
  backend().copy_to_host(host_losses_.data(), model_->losses(), n * sizeof(float));
  double sum = 0.0;  // padding's losses are 0
  for (float l : host_losses_) sum += l;
  return sum / double(real_targets(batch.targets, int64_t(n)));
}

void Engine::micro_backward(const MicroBatch& batch, bool boundary) {
  const auto timer = timers_.time(StepTimer::backward);
  const int gas = cfg_.gradient_accumulation_steps;
  const int64_t n = int64_t(ctx_->B()) * ctx_->T();
  const double tokens = double(real_targets(batch.targets, n));
  ctx_->set_dloss(float(double(scaler_.scale()) / (tokens * gas)));
  {
    const auto inner = timers_.time(StepTimer::backward_inner);
    // 1-bit Adam once frozen: no gradient reduction, the optimizer exchanges its momentum.
    const bool reduce = optimizer_->reduces_gradients(progress_.applied_steps + 1);
    zero_->begin_backward(reduce && (cfg_.zero.stage >= 2 || boundary));
    ctx_->backward(*model_);
  }
  const auto allreduce = timers_.time(StepTimer::backward_allreduce);
  zero_->end_backward();
  // At the boundary nothing runs between backward and the optimizer step: wait for
  // the reductions here, as DeepSpeed's backward does (its backward_allreduce).
  if (boundary) zero_->finish_reductions();
}

void Engine::optimizer_step() {
  {
    const auto timer = timers_.time(StepTimer::step);
    take_optimizer_step();
  }
  last_times_ = timers_.times();
}

void Engine::take_optimizer_step() {
  profiler::Scope scope(&tracer(), optimizer_name_, profiler::Category::optimizer);
  const float scale = scaler_.scale();
  last_ = StepStats{};
  last_.loss_scale = scale;
  GradSummary g;
  {
    const auto timer = timers_.time(StepTimer::optimizer_gradients);
    g = gradient_summary();
  }
  last_.step = ++progress_.global_step;
  log_checkpoint_times();
  if (g.overflow) {
    // DeepSpeed skips the update and does not advance the LR schedule.
    zero_->zero_grads();
    scaler_.update(true);
    ++progress_.skipped_steps;
    last_.skipped = true;
    last_.lr = current_lr();
    return;
  }
  apply_update(g, scale);
  zero_->zero_grads();
  scaler_.update(false);
}

// The norm, clipping and the update of this rank's partition, then the working
// parameters gathered back.
void Engine::apply_update(const GradSummary& g, float scale) {
  // The data-parallel ranks the gradients were summed over (none: local ones).
  const bool reduced = optimizer_->reduces_gradients(progress_.applied_steps + 1);
  const double ranks = reduced ? double(runtime_.zero_comm().world_size()) : 1.0;
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
  if (const auto betas = schedule_->betas_for_update(progress_.applied_steps))
    std::tie(args.beta1, args.beta2) = *betas;
  args.step = ++progress_.applied_steps;
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
}

// Each parameter's gradient counts once in the norm: the tied embedding on the
// first stage only, a tensor-parallel replica (layernorms, row-parallel
// biases, wpe) at 1/tp on each of the tp ranks that hold it alike.
GradSummary Engine::gradient_summary() {
  if (!runtime_.topology()) return zero_->finish_gradients();
  std::vector<WeightedRange> weights;
  if (const int tp = tensor_parallel_size(); tp > 1)
    for (const ParamSpec* p : tree_->params())
      if (p->shard.replicated()) weights.push_back({{p->offset, p->offset + p->numel}, 1.0 / tp});
  if (pipeline_) pipeline_->reduce_tied_gradients(*zero_, weights);
  GradSummary g = zero_->finish_gradients(std::move(weights));
  float both[2] = {float(g.sum_squares), g.overflow ? 1.0f : 0.0f};  // host values
  runtime_.sum_over_model_groups(both, 2);
  return {both[0], both[1] > 0.0f || !std::isfinite(both[0])};
}

std::unique_ptr<Engine> initialize(const Config& cfg, std::unique_ptr<CausalLM> model,
                                   EngineOptions opts) {
  return std::make_unique<Engine>(cfg, std::move(model), std::move(opts));
}

}  // namespace hybrid
