// Engine::evaluate: validation's forward of one micro-batch between optimizer
// steps, on the weights the last step left. It shares the training forward's
// path (ZeRO-3 gathers and releases each module's parameters, tensor-parallel
// blocks reduce their outputs) but none of what a training step counts: no
// backward, no micro-step, no step timer, the tracer off and its collectives
// booked outside any step, so the next step runs exactly as it would have.
#include <stdexcept>

#include "engine/engine.h"

namespace hybrid {

namespace {

// While it lives: the tracer records nothing and the communication tracer books
// collectives and waits to step -1 (outside training, as during set-up). The
// next training step's begin_step books its own from then on.
class OutsideTrainingSteps {
 public:
  OutsideTrainingSteps(profiler::Tracer& tracer, profiler::CommTracer& comm)
      : tracer_(tracer), was_enabled_(tracer.enabled()) {
    tracer_.set_enabled(false);
    comm.begin_step(-1);
  }
  ~OutsideTrainingSteps() { tracer_.set_enabled(was_enabled_); }
  OutsideTrainingSteps(const OutsideTrainingSteps&) = delete;
  OutsideTrainingSteps& operator=(const OutsideTrainingSteps&) = delete;

 private:
  profiler::Tracer& tracer_;
  bool was_enabled_;
};

}  // namespace

double Engine::evaluate(const int32_t* inputs, const int32_t* targets, const int32_t* positions) {
  if (pipeline_)
    throw std::logic_error(
        "evaluate: not with pipeline stages (a stage runs its forward only inside the schedule)");
  if (micro_step_ != 0)
    throw std::logic_error("evaluate: between optimizer steps, not inside an accumulation");
  const OutsideTrainingSteps outside(tracer(), comm_tracer());
  const size_t n = copy_in({inputs, targets, positions});
  ctx_->forward(*model_);
  zero_->end_forward();
  // activation_checkpointing.profile counts the checkpointed blocks' time since
  // the last optimizer step: the evaluation's is not the next step's.
  (void)model_->take_checkpoint_times();
  std::vector<float> losses(n);
  backend().copy_to_host(losses.data(), model_->losses(), n * sizeof(float));
  double sum = 0.0;  // padding's losses are 0
  for (float l : losses) sum += l;
  return sum / double(engine::real_targets(targets, int64_t(n)));
}

}  // namespace hybrid
