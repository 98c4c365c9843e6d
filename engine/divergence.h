// When a finished run counts as diverged: its loss was NaN or infinite for every
// step of its last window, or every step of the last full window was skipped
// (the loss scaler or the overflow check refused each update).
//
// The window is the last min(10, steps - 1) steps. Ten because a single NaN or
// infinite loss is not divergence (an fp16 overflow the loss scaler recovers
// from shows one or two), while a loss that stays non-finite for ten steps has
// lost the weights. A shorter run is judged on all its steps but the first,
// whose loss comes from the weights before any update of the run (lr 1e30 makes
// every loss after the first NaN); a one-step run on its one step. The skip rule needs a
// full window of ten: fp16's dynamic loss scale starts high and skips a few
// early steps while it halves (one per step after the hysteresis), which in a
// short run may be every step without anything being wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

inline constexpr int64_t kDivergenceWindow = 10;

// "" when the run did not diverge, else why ("the loss was NaN or infinite for
// each of the last 10 steps (final loss nan)"). losses[i] and skipped[i] are
// step i's of this invocation.
std::string divergence(const std::vector<double>& losses, const std::vector<bool>& skipped);

}  // namespace hybrid
