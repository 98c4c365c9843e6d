// `hybrid-tune generate`'s noise: the training sweep's rule (autotune/noise.h,
// tie_break.h) on generation trials. A trial's interval is the distribution-free
// 95 % interval of its median decode step, carried over to its metric in
// proportion (tokens/s inversely, the p99 directly); trials whose interval
// overlaps the best's are within noise of it. The tied candidates, the best 3
// at most, then run again in interleaved rounds (round r runs them in an order
// rotated by r), each run one more value of its metric; the best median of a
// candidate's values wins, and the decision holds when the winner's worst value
// beats every other candidate's best (with four values a candidate's range is
// its median's distribution-free interval); otherwise the tie stands and the
// best median is written.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/generate_sweep.h"
#include "autotune/noise.h"

namespace hybrid::autotune {

// The trial's interval in its metric's units; nullopt without timed decode steps.
std::optional<MetricInterval> generate_interval(Metric m, const GenerateTrial& t);

// Indices of the best ok trial and those within noise of it, best first, at
// most max_tied; with confirm_best, the runner-up joins a best that ties with
// none. Fewer than 2: nothing to confirm.
std::vector<size_t> generate_ties(Metric m, const GenerateSweepResult& r, size_t max_tied,
                                  bool confirm_best);

struct GenerateConfirmation {
  int rounds = 0;
  std::vector<size_t> tied;  // trial indices, best of the sweep first
  std::vector<std::vector<double>>
      values;                   // per tied candidate: its first value, then each round's
  std::vector<double> medians;  // per tied candidate (0: no value)
  size_t winner = 0;            // index into tied
  bool decided = false;         // false: still within noise
  std::string summary;          // what hybrid-tune prints
};

// The winner of values (the first is each candidate's sweep value) by the rule above.
GenerateConfirmation decide_generate_confirmation(Metric m, std::vector<size_t> tied,
                                                  std::vector<std::vector<double>> values,
                                                  int rounds);

// Runs the rounds (trial directories DIR/confirm-R/KEY), decides, and makes
// the winner r's best. nullopt: nothing tied, or interrupted.
std::optional<GenerateConfirmation> confirm_generate(const GenerateSpec& s, GenerateSweepResult& r,
                                                     const GenerateSweepOptions& o, int rounds,
                                                     bool confirm_best, std::ostream& log);

// out (generate_sweep_json's) gets "confirmation": {"rounds", "decided",
// "summary", "candidates": [{"key", "values", "median"}]}, and its "value"
// becomes the winner's median.
void add_confirmation_json(nlohmann::json& out, const GenerateSweepResult& r,
                           const GenerateConfirmation& c);

}  // namespace hybrid::autotune
