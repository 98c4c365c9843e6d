// Pipeline parallelism in the Engine (issue 16): each stage runs a range of
// blocks over its micro-batches in 1F1B order, sending activations forward and
// their gradients back; ZeRO (stages 0 and 1) reduces over the data-parallel
// group. Every stage keeps the whole flat parameter space, so the ZeRO runtime,
// checkpoints and llm.c mapping need no second layout; a stage's optimizer sees
// zero gradients outside the parameters it owns, which then never matter, and
// checkpoints and gather_parameters take each parameter from its owner.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "engine/engine.h"

namespace hybrid {

using namespace engine;

namespace {

// The first flat offset of m's parameters (children included); max() when none.
int64_t first_offset(const Module& m) {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const ParamSpec* p : m.own_params()) first = std::min(first, p->offset);
  for (const Module* c : m.children()) first = std::min(first, first_offset(*c));
  return first;
}

}  // namespace

void Engine::setup_pipeline() {
  const int pp = pipeline_stages();
  if (pp == 1) return;
  const TopologyCoords me = topology_->coords(rank());
  const bool first = me.pp == 0, last = me.pp == pp - 1;
  const auto& blocks = model_->blocks;
  const auto parts = model_->partition_stages(pp, cfg_.parallel.partition);
  // Owned parameters are contiguous: embeddings, blocks in order, ln_f last.
  for (int s = 0; s < pp; ++s) {
    const int64_t begin = s == 0 ? 0 : first_offset(*blocks[size_t(parts[size_t(s)].begin)]);
    const int64_t end = s == pp - 1 ? std::numeric_limits<int64_t>::max()
                                    : first_offset(*blocks[size_t(parts[size_t(s)].end)]);
    stage_ranges_.push_back({begin, end});
  }
  const StageBlocks mine = parts[size_t(me.pp)];
  model_->set_stage(mine.begin, mine.end, first, last);
  log(fmt::format("pipeline: partition {}: {}", cfg_.parallel.partition, [&] {
    std::string s;
    for (int k = 0; k < pp; ++k)
      s += fmt::format("{}stage {} h.{}-{}", k ? ", " : "", k, parts[size_t(k)].begin,
                       parts[size_t(k)].end - 1);
    return s;
  }()));
}

// What the stage's modules read: its own parameters, and the tied embedding on
// the last stage.
void Engine::restrict_zero_to_stage() {
  if (pipeline_stages() == 1) return;
  std::vector<FlatRange> used{stage_ranges_[size_t(pipeline_stage())]};
  const ParamSpec& wte = *model_->embedding->wte();
  if (model_->last_stage() && !model_->first_stage())
    used.insert(used.begin(), {wte.offset, wte.offset + wte.numel});  // the embedding comes first
  zero_->set_active_ranges(std::move(used));
}

float Engine::train_batch(const std::vector<const int32_t*>& inputs,
                          const std::vector<const int32_t*>& targets) {
  const int gas = cfg_.gradient_accumulation_steps;
  if (int(inputs.size()) != gas || int(targets.size()) != gas)
    throw std::invalid_argument(fmt::format(
        "train_batch: {} inputs and {} targets for {} micro-batches (gradient_accumulation_steps)",
        inputs.size(), targets.size(), gas));
  if (pipeline_stages() == 1) {
    double loss = 0.0;
    for (int k = 0; k < gas; ++k) {
      loss += forward(inputs[size_t(k)], targets[size_t(k)]);
      backward();
      step();
    }
    return float(loss / gas);
  }
  begin_step();
  double loss_sum = 0.0;
  const int stage = pipeline_stage(), stages = pipeline_stages();
  pipeline_times_ = {};
  const int64_t t0 = tracer_.now_ns();
  for (const PipeStep& st : one_f_one_b(stage, stages, gas))
    run_pipe_step(st, inputs, targets, loss_sum);
  pipeline_times_.schedule_ms = double(tracer_.now_ns() - t0) / 1e6;
  float loss = float(loss_sum / gas);
  groups_.pp->broadcast(&loss, sizeof loss, stages - 1);  // the last stage computed it
  {
    const auto timer = timers_.time(StepTimer::step);
    take_optimizer_step();
  }
  last_times_ = timers_.times();
  return loss;
}

void Engine::run_pipe_step(const PipeStep& st, const std::vector<const int32_t*>& inputs,
                           const std::vector<const int32_t*>& targets, double& loss_sum) {
  const int gas = cfg_.gradient_accumulation_steps;
  if (st.kind != PipeStep::forward && st.kind != PipeStep::backward) return pipe_transfer(st);
  model_->use_slot(st.micro % model_->slots());
  ctx_->set_batch(model_->tokens_buffer(), model_->targets_buffer());
  const int B = ctx_->B(), T = ctx_->T();
  const size_t n = size_t(B) * size_t(T);
  if (st.kind == PipeStep::forward) {
    const auto timer = timers_.time(StepTimer::forward);
    if (model_->first_stage())
      backend_->copy_from_host(model_->tokens_buffer(), inputs[size_t(st.micro)],
                               n * sizeof(int32_t));
    if (model_->last_stage())
      backend_->copy_from_host(model_->targets_buffer(), targets[size_t(st.micro)],
                               n * sizeof(int32_t));
    ctx_->forward(*model_);
    zero_->end_forward();
    if (!model_->last_stage()) return;
    host_losses_.resize(n);
    backend_->copy_to_host(host_losses_.data(), model_->losses(), n * sizeof(float));
    double sum = 0.0;
    for (float l : host_losses_) sum += l;
    loss_sum += sum / double(n);
    return;
  }
  const auto timer = timers_.time(StepTimer::backward);
  ctx_->set_dloss(float(double(scaler_.scale()) / (double(n) * gas)));
  const bool boundary = st.micro == gas - 1;  // 1F1B runs backwards in order
  zero_->begin_backward(boundary);            // stages 0 and 1: reduce at the boundary
  ctx_->backward(*model_);
  zero_->end_backward();
  if (boundary) zero_->finish_reductions();
}

// Activations go forward from stage_output() into the next stage's
// stage_input(); their gradients come back through residual_grad().
void Engine::pipe_transfer(const PipeStep& st) {
  comm::Communicator& pp = *groups_.pp;
  const int stage = pipeline_stage();
  const size_t bytes = model_->stream_bytes();
  const int slots = model_->slots();
  auto slot = [&](int micro) -> GPT2& {
    model_->use_slot(micro % slots);
    return *model_;
  };
  const int64_t t0 = tracer_.now_ns();
  switch (st.kind) {
    case PipeStep::recv_forward:
      pp.recv(slot(st.micro).stage_input(), bytes, stage - 1);
      break;
    case PipeStep::send_forward:
      pp.send(slot(st.micro).stage_output(), bytes, stage + 1);
      break;
    case PipeStep::recv_backward:
      pp.recv(slot(st.micro).residual_grad(), bytes, stage + 1);
      break;
    case PipeStep::send_backward:
      pp.send(slot(st.micro).residual_grad(), bytes, stage - 1);
      break;
    case PipeStep::send_forward_recv_backward: {
      const void* out = slot(st.micro).stage_output();
      pp.send_recv(out, bytes, stage + 1, slot(st.other).residual_grad(), bytes, stage + 1);
      break;
    }
    case PipeStep::send_backward_recv_forward: {
      const void* out = slot(st.micro).residual_grad();
      pp.send_recv(out, bytes, stage - 1, slot(st.other).stage_input(), bytes, stage - 1);
      break;
    }
    default:
      break;
  }
  const int64_t t1 = tracer_.now_ns();
  // The stage waited: exposed transfer or bubble, booked as both.
  comm_tracer_->record_wait(t0, t1, comm_tracer_->step_at(t0), /*pipeline=*/true);
  pipeline_times_.waiting_ms += double(t1 - t0) / 1e6;
}

FlatRange Engine::saved_range(int r) const {
  const auto& part = zero_->partition();
  const TopologyCoords c = topology_ ? topology_->coords(r) : TopologyCoords{0, r, 0};
  FlatRange range = cfg_.zero.stage == 0 ? (c.dp == 0 ? FlatRange{0, part.padded()} : FlatRange{})
                                         : part.shard(c.dp);
  if (pipeline_stages() > 1) range = range.intersect(stage_ranges_[size_t(c.pp)]);
  return range;
}

}  // namespace hybrid
