#include "engine/model/execution_context.h"

namespace hybrid::engine {

void ExecutionContext::set_tracer(profiler::Tracer* t, const std::vector<Module*>& modules) {
  tracer_ = t;
  names_.clear();
  if (!t) return;
  for (auto* m : modules) names_.push_back(t->intern(m->name().empty() ? "model" : m->name()));
}

void ExecutionContext::forward(Module& m) {
  const bool re = recomputing_;
  if (hooks_) re ? hooks_->before_recompute(m) : hooks_->before_forward(m);
  {
    const bool traced = tracer_ && tracer_->enabled();
    const uint64_t flops = !traced ? 0 : re ? m.recompute_flops(B_, T_) : m.forward_flops(B_, T_);
    profiler::Scope scope(traced ? tracer_ : nullptr, traced ? names_[size_t(m.id())] : 0,
                          re ? profiler::Category::recompute : profiler::Category::forward, m.id(),
                          flops);
    re ? m.recompute(*this) : m.forward(*this);
  }
  if (hooks_) re ? hooks_->after_recompute(m) : hooks_->after_forward(m);
}

void ExecutionContext::recompute(Module& m) {
  struct Mode {  // restored on the way out, exceptions included
    bool& flag;
    explicit Mode(bool& f) : flag(f) { flag = true; }
    ~Mode() { flag = false; }
  } mode(recomputing_);
  forward(m);
}

void ExecutionContext::backward(Module& m) {
  if (hooks_) hooks_->before_backward(m);
  {
    const bool traced = tracer_ && tracer_->enabled();
    profiler::Scope scope(traced ? tracer_ : nullptr, traced ? names_[size_t(m.id())] : 0,
                          profiler::Category::backward, m.id(),
                          traced ? m.backward_flops(B_, T_) : 0);
    m.backward(*this);
  }
  if (hooks_) hooks_->after_backward(m);
}

void ExecutionContext::tp_all_reduce(void* buf, size_t n) {
  if (!tp_ || tp_->world_size() == 1) return;
  const int64_t t0 = tracer_ ? tracer_->now_ns() : 0;
  tp_->all_reduce(buf, n, dt_, comm::ReduceOp::sum);
  if (tp_waited_ && tracer_) tp_waited_(t0, tracer_->now_ns());
}

void ExecutionContext::tp_all_gather(const float* send, float* recv, size_t count) {
  const int64_t t0 = tracer_ ? tracer_->now_ns() : 0;
  tp_->all_gather(send, recv, std::vector<size_t>(size_t(tp_->world_size()), count),
                  kernels::DType::f32);
  if (tp_waited_ && tracer_) tp_waited_(t0, tracer_->now_ns());
}

}  // namespace hybrid::engine
