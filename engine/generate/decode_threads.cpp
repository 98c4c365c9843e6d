#include "engine/generate/decode_threads.h"

#include <algorithm>

namespace hybrid::engine {

DecodeThreads::DecodeThreads(int most) : most_(std::max(most, 1)), chosen_(most_) {}

double DecodeThreads::median(const std::vector<double>& v) {
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

void DecodeThreads::record(double ms) {
  if (most_ == 1) return;
  if (trying_other_) {
    tried_.push_back(ms);
    if (int(tried_.size()) < kTrySteps) return;
    trying_other_ = false;
    // The tries' median against the chosen count's recent one: a single
    // step of a busy machine's spin-waits or time slices decides nothing.
    if (median(tried_) < median(recent_)) {
      chosen_ = other();
      recent_ = tried_;
      interval_ = kFirstRetry;
    } else {
      interval_ = std::min(2 * interval_, kLongestRetry);
    }
    tried_.clear();
    until_retry_ = interval_;
    return;
  }
  recent_.push_back(ms);
  if (int(recent_.size()) > kWindow) recent_.erase(recent_.begin());
  if (--until_retry_ <= 0) trying_other_ = true;
}

}  // namespace hybrid::engine
