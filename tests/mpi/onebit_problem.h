// The 1-bit optimizers' test problem, shared with their NumPy references
// (scripts/peers/onebit_adam_reference.py `gradient`): three tensors whose sizes
// are no multiple of the compression's padding, a masked range, per-rank
// gradients that depend on the parameters.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace hybrid::test {

inline constexpr int kSizes[] = {37, 64, 130};
inline constexpr int64_t kMaskBegin = 40, kMaskEnd = 48;

// Rank r's gradient at step s (the reference's `gradient`).
inline std::vector<float> onebit_gradient(const std::vector<float>& p, int r, int s) {
  std::vector<float> g(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const auto t = float(0.05 * std::cos(double(i) * (r + 1.0)));
    const auto a = float(1.0 + double(i % 5) / 5.0);
    const auto n = float(0.01 * std::sin(0.37 * double(i) + 1.3 * s + 2.1 * r));
    g[i] = (p[i] - t) * a + n;
    if (int64_t(i) >= kMaskBegin && int64_t(i) < kMaskEnd) g[i] = 0.0f;
  }
  return g;
}

}  // namespace hybrid::test
