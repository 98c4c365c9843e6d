// The decode step's thread count, chosen by measurement (issue 29).
//
// A decode step at a few rows is ~60 short OpenMP regions (about 0.1 ms each
// at batch 1). On an idle machine all of the rank's threads are fastest. On
// one whose other processes keep the cores busy, every region waits for a
// thread that the kernel has just descheduled, and libgomp's spin-wait burns
// the waiting thread's share meanwhile: GPT-2 124M's bf16 step took 106 ms on
// 2 threads against 49 ms on one (AMD EPYC Zen 4, 2 vCPUs, load ~7). So the
// generator times the steps on both counts and keeps the faster, trying the
// other again now and then (the load changes): 3 steps on it after 4 steps,
// then at doubling intervals up to 64 while it stays the slower, switching
// when the median of the 3 beats the chosen count's median of its last 4. On
// a steady idle machine that costs 3 slow steps in 67.
#pragma once

#include <vector>

namespace hybrid::engine {

class DecodeThreads {
 public:
  // most: the rank's threads (omp_get_max_threads()); 1 leaves nothing to choose.
  explicit DecodeThreads(int most);
  int most() const { return most_; }
  // The thread count for the next step.
  int next() const { return trying_other_ ? other() : chosen_; }
  // That step's wall time.
  void record(double ms);

  static constexpr int kWindow = 4;      // steps whose median stands for the chosen count
  static constexpr int kTrySteps = 3;    // steps of a try of the other count
  static constexpr int kFirstRetry = 4;  // steps before the first try of the other
  static constexpr int kLongestRetry = 64;

 private:
  int other() const { return chosen_ == most_ ? 1 : most_; }
  static double median(const std::vector<double>& v);

  int most_, chosen_;
  bool trying_other_ = false;
  int until_retry_ = kFirstRetry, interval_ = kFirstRetry;
  std::vector<double> recent_;  // the chosen count's last kWindow step times
  std::vector<double> tried_;   // the other count's steps in this try
};

}  // namespace hybrid::engine
