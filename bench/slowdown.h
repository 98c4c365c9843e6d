// Injected slowdown for benchmark loops, to prove the regression check works.
//
//   #include "bench/slowdown.h"
//   static void BM_layernorm(benchmark::State& state) {
//     ...
//     for (auto _ : HYBRID_SLOWED(state)) {   // was: for (auto _ : state)
//       layernorm_forward(...);
//     }
//   }
//
// With HYBRID_BENCH_SLOWDOWN="<name-regex>=<fraction>" (e.g. "layernorm=0.30") in
// the environment, each iteration of a matching benchmark spins for `fraction`
// times the CPU time the loop body just took on this thread, inside the timed
// region: the iteration does that fraction more work whatever the op is. Without
// the variable, or for a benchmark that does not match, the cost is one predictable
// branch per iteration. (A body whose work runs on other threads while this one
// waits gets less than `fraction`: call it from the thread that does the work.)
//
// HYBRID_SLOWED(state) matches against the enclosing function's name (the
// family name of BENCHMARK(fn)). For benchmarks registered under another name
// (RegisterBenchmark("matmul/qkv", ...)), pass it: hybrid::bench::slowed(state, name).
// Manual-time benchmarks (UseManualTime) multiply the time they report instead:
//   state.SetIterationTime(seconds * hybrid::bench::slowdown_factor(name));
#pragma once

#include <benchmark/benchmark.h>
#include <time.h>

#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "bench/compare/slowdown_spec.h"

namespace hybrid::bench {

// HYBRID_BENCH_SLOWDOWN parsed once per process. A malformed value aborts the
// benchmark executable with the parse error: a silently ignored switch would make
// the regression check pass for the wrong reason.
inline const std::vector<SlowdownRule>& slowdown_rules() {
  static const std::vector<SlowdownRule> rules = [] {
    const char* spec = std::getenv(kSlowdownVariable);
    if (!spec) return std::vector<SlowdownRule>{};
    try {
      return parse_slowdown_spec(spec);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::exit(2);
    }
  }();
  return rules;
}

// Extra fraction for `name`; announces each slowed name once on stderr so logs
// show that the injection happened.
inline double slowdown_fraction_for(std::string_view name) {
  const auto& rules = slowdown_rules();
  if (rules.empty()) return 0.0;
  const double f = slowdown_fraction(rules, name);
  if (f > 0) {
    static std::mutex mutex;
    static std::set<std::string, std::less<>> announced;
    std::lock_guard lock(mutex);
    if (announced.insert(std::string(name)).second) {
      std::fprintf(stderr, "%s: slowing '%.*s' by %.0f%%\n", kSlowdownVariable,
                   static_cast<int>(name.size()), name.data(), f * 100.0);
    }
  }
  return f;
}

inline double slowdown_factor(std::string_view name) { return 1.0 + slowdown_fraction_for(name); }

// CPU time of the calling thread, in seconds.
inline double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// A range over the benchmark's iterations that adds the slowdown after each body.
//
// The extra work is measured in CPU time of this thread, not wall time: a spin to a
// wall-clock deadline overshoots whenever the scheduler preempts it near the deadline
// (on a busy machine that doubled a "30 %" slowdown), while CPU work competes for
// the core exactly as the body does, so the ratio holds under load too.
class SlowedLoop {
 public:
  class Iterator {
   public:
    Iterator(benchmark::State::StateIterator it, double fraction) : it_(it), fraction_(fraction) {}

    auto operator*() {
      if (fraction_ > 0) body_start_ = thread_cpu_seconds();
      return *it_;
    }
    Iterator& operator++() {
      if (fraction_ > 0) {
        const double now = thread_cpu_seconds();
        const double until = now + fraction_ * (now - body_start_);
        while (thread_cpu_seconds() < until) {
        }
      }
      ++it_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return it_ != other.it_; }

   private:
    benchmark::State::StateIterator it_;
    double fraction_;
    double body_start_ = 0;
  };

  SlowedLoop(benchmark::State& state, double fraction) : state_(state), fraction_(fraction) {}
  Iterator begin() { return Iterator(state_.begin(), fraction_); }
  Iterator end() { return Iterator(state_.end(), fraction_); }

 private:
  benchmark::State& state_;
  double fraction_;
};

inline SlowedLoop slowed(benchmark::State& state, std::string_view name) {
  return SlowedLoop(state, slowdown_fraction_for(name));
}

}  // namespace hybrid::bench

#define HYBRID_SLOWED(state) ::hybrid::bench::slowed((state), __func__)
