#include "engine/divergence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hybrid {

std::string divergence(const std::vector<double>& losses, const std::vector<bool>& skipped) {
  const auto n = int64_t(losses.size());
  const int64_t window = std::min(kDivergenceWindow, std::max<int64_t>(n - 1, 1));
  if (n == 0) return "";
  const auto from = losses.end() - window;
  if (std::none_of(from, losses.end(), [](double l) { return std::isfinite(l); }))
    return fmt::format(
        "training diverged: the loss was NaN or infinite for each of the last {} "
        "steps (final loss {})",
        window, losses.back());
  if (int64_t(skipped.size()) >= kDivergenceWindow &&
      std::all_of(skipped.end() - kDivergenceWindow, skipped.end(), [](bool s) { return s; }))
    return fmt::format(
        "training diverged: each of the last {} steps was skipped (gradients not "
        "finite; final loss {})",
        kDivergenceWindow, losses.back());
  return "";
}

}  // namespace hybrid
