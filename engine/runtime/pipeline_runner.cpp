// Pipeline parallelism (issue 16): each stage runs a range of blocks over its
// micro-batches in 1F1B order, sending activations forward and their gradients
// back; ZeRO (stages 0 and 1) reduces over the data-parallel group. A stage's
// flat space holds only its own parameters (and the tied embedding on the last
// stage); checkpoints and gather_parameters put the stages' together into the
// whole model (engine/runtime/checkpoint_io.cpp).
#include "engine/runtime/pipeline_runner.h"

#include <fmt/format.h>

#include "engine/model/registry.h"

namespace hybrid::engine {

PipelineRunner::PipelineRunner(const Config& cfg, DeviceRuntime& runtime, CausalLM& model)
    : cfg_(cfg),
      runtime_(runtime),
      model_(model),
      stage_(runtime.coords().pp),
      stages_(runtime.size(ParallelAxis::pp)) {
  const auto parts = model_.partition_stages(stages_, cfg_.parallel.partition);
  for (int s = 0; s < stages_; ++s) {  // every stage's flat space, as its ranks lay it out
    auto stage = make_model(cfg_.model, cfg_.padded_vocab(), model_.tensor_slice());
    stage->set_pipeline_stage(s, stages_, cfg_.parallel.partition);
    stage_param_counts_.push_back(ModuleTree(*stage).param_count());
  }
  model_.set_pipeline_stage(stage_, stages_, cfg_.parallel.partition);
  runtime_.log(fmt::format("pipeline: partition {}: {}", cfg_.parallel.partition, [&] {
    std::string s;
    for (int k = 0; k < stages_; ++k)
      s += fmt::format("{}stage {} h.{}-{}", k ? ", " : "", k, parts[size_t(k)].begin,
                       parts[size_t(k)].end - 1);
    return s;
  }()));
}

double PipelineRunner::run(const std::vector<MicroBatch>& batches, ExecutionContext& ctx,
                           const MicroSteps& steps) {
  const int gas = cfg_.gradient_accumulation_steps;
  double loss_sum = 0.0;
  times_ = {};
  profiler::Tracer& tracer = runtime_.tracer();
  const int64_t t0 = tracer.now_ns();
  for (const PipeStep& st : one_f_one_b(stage_, stages_, gas))
    run_step(st, batches, ctx, steps, loss_sum);
  times_.schedule_ms = double(tracer.now_ns() - t0) / 1e6;
  float loss = float(loss_sum / gas);
  // The last stage computed it; a host value, over the host communicator's pp group.
  runtime_.host_group(ParallelAxis::pp).broadcast(&loss, sizeof loss, stages_ - 1);
  return loss;
}

void PipelineRunner::run_step(const PipeStep& st, const std::vector<MicroBatch>& batches,
                              ExecutionContext& ctx, const MicroSteps& steps, double& loss_sum) {
  const int gas = cfg_.gradient_accumulation_steps;
  if (st.kind != PipeStep::forward && st.kind != PipeStep::backward) return transfer(st);
  const MicroBatch& batch = batches[size_t(st.micro)];
  model_.use_slot(st.micro % model_.slots());
  ctx.set_batch(model_.tokens_buffer(), model_.targets_buffer(),
                batch.positions ? model_.positions_buffer() : nullptr);
  if (st.kind == PipeStep::forward)
    loss_sum += steps.forward(batch);
  else
    steps.backward(batch, st.micro == gas - 1);  // 1F1B runs backwards in order
}

// Activations go forward from stage_output() into the next stage's
// stage_input(); their gradients come back through residual_grad(). Device
// buffers: the device communicator's pp group. On a GPU (NCCL) a transfer's
// wait only orders the compute stream after it, so the host waits here for
// almost nothing: the time booked as the bubble is the host's, not the GPU's.
void PipelineRunner::transfer(const PipeStep& st) {
  comm::Communicator& pp = runtime_.group(ParallelAxis::pp);
  const size_t bytes = model_.stream_bytes();
  const int slots = model_.slots();
  auto slot = [&](int micro) -> CausalLM& {
    model_.use_slot(micro % slots);
    return model_;
  };
  const int64_t t0 = runtime_.tracer().now_ns();
  switch (st.kind) {
    case PipeStep::recv_forward:
      pp.recv(slot(st.micro).stage_input(), bytes, stage_ - 1);
      break;
    case PipeStep::send_forward:
      pp.send(slot(st.micro).stage_output(), bytes, stage_ + 1);
      break;
    case PipeStep::recv_backward:
      pp.recv(slot(st.micro).residual_grad(), bytes, stage_ + 1);
      break;
    case PipeStep::send_backward:
      pp.send(slot(st.micro).residual_grad(), bytes, stage_ - 1);
      break;
    case PipeStep::send_forward_recv_backward: {
      const void* out = slot(st.micro).stage_output();
      pp.send_recv(out, bytes, stage_ + 1, slot(st.other).residual_grad(), bytes, stage_ + 1);
      break;
    }
    case PipeStep::send_backward_recv_forward: {
      const void* out = slot(st.micro).residual_grad();
      pp.send_recv(out, bytes, stage_ - 1, slot(st.other).stage_input(), bytes, stage_ - 1);
      break;
    }
    default:
      break;
  }
  const int64_t t1 = runtime_.tracer().now_ns();
  // The stage waited: exposed transfer or bubble, booked as both.
  profiler::CommTracer& ct = runtime_.comm_tracer();
  ct.record_wait(t0, t1, ct.step_at(t0), /*pipeline=*/true);
  times_.waiting_ms += double(t1 - t0) / 1e6;
}

void PipelineRunner::reduce_tied_gradients(ZeroRuntime& zero, std::vector<WeightedRange>& weights) {
  const ParamSpec* t = model_.tied_parameter();
  if (!t) return;
  const FlatRange tied{t->offset, t->offset + t->numel};
  zero.all_reduce_grads(tied, *runtime_.tied_comm());
  if (stage_ != 0) weights.push_back({tied, 0.0});
}

}  // namespace hybrid::engine
