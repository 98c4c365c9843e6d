#include "engine/model/execution_context.h"

namespace hybrid::engine {

void ExecutionContext::set_tracer(profiler::Tracer* t, const std::vector<Module*>& modules) {
  tracer_ = t;
  names_.clear();
  if (!t) return;
  for (auto* m : modules) names_.push_back(t->intern(m->name().empty() ? "model" : m->name()));
}

void ExecutionContext::forward(Module& m) {
  if (hooks_) hooks_->before_forward(m);
  {
    const bool traced = tracer_ && tracer_->enabled();
    profiler::Scope scope(traced ? tracer_ : nullptr, traced ? names_[size_t(m.id())] : 0,
                          profiler::Category::forward, m.id(),
                          traced ? m.forward_flops(B_, T_) : 0);
    m.forward(*this);
  }
  if (hooks_) hooks_->after_forward(m);
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

}  // namespace hybrid::engine
