// DeepSpeed's wall-clock breakdown (`wall_clock_breakdown`): how long each
// optimizer step spent in forward, backward (its computation, then the gradient
// reduction left after it) and step, and inside step in the optimizer's parts.
// Times are per optimizer step, summed over its micro-steps (DeepSpeed's global
// timers). On an asynchronous device every boundary waits for the device, so
// the timers measure work done, not work queued (at the cost of that wait).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::engine {

enum class StepTimer : uint8_t {
  forward,
  backward,             // backward_inner + backward_allreduce
  backward_inner,       // the backward computation (reductions overlapped with it included)
  backward_allreduce,   // after the computation: the last bucket and tied weights' reductions,
                        // and at the accumulation boundary waiting for all of them
  step,                 // at the boundary: the optimizer step, all of it
  optimizer_gradients,  // measuring the reduced gradients: norm and overflow across ranks
  optimizer_step,       // the optimizer's update of this rank's partition
  optimizer_allgather,  // bringing the other ranks' updated parameters (ZeRO 1-3)
};
inline constexpr int kStepTimerCount = 8;

// DeepSpeed's timer names ("forward", "backward_inner", "optimizer_step", ...).
std::string_view step_timer_name(StepTimer t);

// One optimizer step's timers; `measured` says which ran (optimizer_allgather
// only with ZeRO stages 1-3).
struct StepTimes {
  std::array<double, kStepTimerCount> ms{};
  std::array<bool, kStepTimerCount> measured{};

  double operator[](StepTimer t) const { return ms[size_t(t)]; }
  bool has(StepTimer t) const { return measured[size_t(t)]; }
  // DeepSpeed's log lines: the engine's timers, then the optimizer's:
  //   time (ms) | forward: 1.23 | backward: 4.56 | backward_inner: ... | step: 0.78
  //   time (ms) | optimizer_gradients: 0.01 | optimizer_step: 0.70 | optimizer_allgather: 0.05
  std::vector<std::string> log_lines() const;
};

// Accumulates the timers of the step in progress.
class StepTimerSet {
 public:
  // Disabled: every scope is free (no clock read). `sync` waits for the device
  // before each clock read (asynchronous backends); may be empty.
  explicit StepTimerSet(bool enabled = false, std::function<void()> sync = {});

  bool enabled() const { return enabled_; }
  void reset() { times_ = {}; }  // at the first micro-step of a step
  const StepTimes& times() const { return times_; }

  // Adds the time from construction to destruction to one timer.
  class Scope {
   public:
    Scope(StepTimerSet& set, StepTimer t);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StepTimerSet& set_;
    StepTimer timer_;
    std::chrono::steady_clock::time_point start_;
  };
  Scope time(StepTimer t) { return Scope(*this, t); }

 private:
  std::chrono::steady_clock::time_point now() const;

  bool enabled_;
  std::function<void()> sync_;
  StepTimes times_;
};

}  // namespace hybrid::engine
