#include "engine/step_timers.h"

#include <fmt/format.h>

#include <utility>

namespace hybrid::engine {

std::string_view step_timer_name(StepTimer t) {
  switch (t) {
    case StepTimer::forward:
      return "forward";
    case StepTimer::backward:
      return "backward";
    case StepTimer::backward_inner:
      return "backward_inner";
    case StepTimer::backward_allreduce:
      return "backward_allreduce";
    case StepTimer::step:
      return "step";
    case StepTimer::optimizer_gradients:
      return "optimizer_gradients";
    case StepTimer::optimizer_step:
      return "optimizer_step";
    case StepTimer::optimizer_allgather:
      return "optimizer_allgather";
  }
  return "?";
}

std::vector<std::string> StepTimes::log_lines() const {
  // DeepSpeed logs the engine's global timers and the ZeRO optimizer's timers
  // as two groups, in this order.
  auto line = [this](StepTimer first, StepTimer last) {
    std::string s = "time (ms)";
    for (int t = int(first); t <= int(last); ++t)
      if (measured[size_t(t)])
        s += fmt::format(" | {}: {:.2f}", step_timer_name(StepTimer(t)), ms[size_t(t)]);
    return s;
  };
  return {line(StepTimer::forward, StepTimer::step),
          line(StepTimer::optimizer_gradients, StepTimer::optimizer_allgather)};
}

StepTimerSet::StepTimerSet(bool enabled, std::function<void()> sync)
    : enabled_(enabled), sync_(std::move(sync)) {}

std::chrono::steady_clock::time_point StepTimerSet::now() const {
  if (sync_) sync_();
  return std::chrono::steady_clock::now();
}

StepTimerSet::Scope::Scope(StepTimerSet& set, StepTimer t) : set_(set), timer_(t) {
  if (set_.enabled_) start_ = set_.now();
}

StepTimerSet::Scope::~Scope() {
  if (!set_.enabled_) return;
  const auto end = set_.now();
  const size_t i = size_t(timer_);
  set_.times_.ms[i] += std::chrono::duration<double, std::milli>(end - start_).count();
  set_.times_.measured[i] = true;
}

}  // namespace hybrid::engine
