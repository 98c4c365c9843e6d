// Pipeline parallelism in the Engine (issue 16): each stage runs a range of
// blocks over its micro-batches in 1F1B order, sending activations forward and
// their gradients back; ZeRO (stages 0 and 1) reduces over the data-parallel
// group. A stage's flat space holds only its own parameters (and the tied embedding
// on the last stage); checkpoints and gather_parameters put the stages'
// together into the whole model (engine/engine_topology.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "engine/engine.h"
#include "engine/model/registry.h"

namespace hybrid {

using namespace engine;

void Engine::setup_pipeline() {
  const int pp = pipeline_stages();
  if (pp == 1) return;
  const auto parts = model_->partition_stages(pp, cfg_.parallel.partition);
  for (int s = 0; s < pp; ++s) {  // every stage's flat space, as its ranks lay it out
    auto stage = engine::make_model(cfg_.model, cfg_.padded_vocab(), model_->tensor_slice());
    stage->set_pipeline_stage(s, pp, cfg_.parallel.partition);
    stage_param_counts_.push_back(ModuleTree(*stage).param_count());
  }
  model_->set_pipeline_stage(pipeline_stage(), pp, cfg_.parallel.partition);
  log(fmt::format("pipeline: partition {}: {}", cfg_.parallel.partition, [&] {
    std::string s;
    for (int k = 0; k < pp; ++k)
      s += fmt::format("{}stage {} h.{}-{}", k ? ", " : "", k, parts[size_t(k)].begin,
                       parts[size_t(k)].end - 1);
    return s;
  }()));
}

double Engine::train_batch(const std::vector<const int32_t*>& inputs,
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
    return loss / gas;
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
  // The last stage computed it; a host value, over the host communicator's pp group.
  host_group(ParallelAxis::pp).broadcast(&loss, sizeof loss, stages - 1);
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
  if (st.kind == PipeStep::forward)
    loss_sum += micro_forward(inputs[size_t(st.micro)], targets[size_t(st.micro)]);
  else
    micro_backward(st.micro == gas - 1);  // 1F1B runs backwards in order
}

// Activations go forward from stage_output() into the next stage's
// stage_input(); their gradients come back through residual_grad(). Device
// buffers: the device communicator's pp group. On a GPU (NCCL) a transfer's
// wait only orders the compute stream after it, so the host waits here for
// almost nothing: the time booked as the bubble is the host's, not the GPU's.
void Engine::pipe_transfer(const PipeStep& st) {
  comm::Communicator& pp = *groups_.pp;
  const int stage = pipeline_stage();
  const size_t bytes = model_->stream_bytes();
  const int slots = model_->slots();
  auto slot = [&](int micro) -> CausalLM& {
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
  const TopologyCoords c = topology_ ? topology_->coords(r) : TopologyCoords{0, r, 0};
  // Stages hold flat spaces of their own sizes, each partitioned over dp.
  const Partition part = pipeline_stages() > 1
                             ? Partition(stage_param_counts_[size_t(c.pp)], topology_->dp(), c.dp)
                             : zero_->partition();
  FlatRange range = cfg_.zero.stage == 0 ? (c.dp == 0 ? FlatRange{0, part.padded()} : FlatRange{})
                                         : part.shard(c.dp);
  return range;
}

}  // namespace hybrid
