#include "bench/compare/ab_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace hybrid::bench {

namespace {

nlohmann::json run_side(const Suite& suite, const AbOptions& options, const AbSide& side,
                        int round) {
  RunOptions run = options.run;
  run.executable_dir = side.executable_dir;
  run.env = side.env;
  run.repetitions = options.repetitions;
  run.round = round;
  run.progress = nullptr;  // one line per round instead (on_round)
  return run_suite(suite, run);
}

// Each side's rounds merged; the context keeps the first round's description and
// adds how the rounds ran.
nlohmann::json merge_side(const std::vector<nlohmann::json>& rounds, const AbSide& side,
                          const char* role, const nlohmann::json& order) {
  nlohmann::json merged = merge_benchmark_outputs(rounds, {});
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : side.env) env[k] = v;
  merged["context"]["hybrid_ab"] = {{"role", role},
                                    {"executable_dir", side.executable_dir.string()},
                                    {"env", env},
                                    {"rounds", rounds.size()},
                                    {"order", order}};
  return merged;
}

}  // namespace

AbRuns run_ab(const Suite& suite, const AbOptions& options) {
  if (options.rounds < 2) {
    throw std::invalid_argument(fmt::format(
        "--rounds must be at least 2 (a paired test needs pairs), got {}", options.rounds));
  }
  if (options.repetitions < 1) {
    throw std::invalid_argument(
        fmt::format("--repetitions must be at least 1, got {}", options.repetitions));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<nlohmann::json> baseline, current;
  nlohmann::json order = nlohmann::json::array();
  for (int r = 0; r < options.rounds; ++r) {
    const bool baseline_first = r % 2 == 0;  // AB, BA, AB, ...
    order.push_back(baseline_first ? "baseline,current" : "current,baseline");
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == baseline_first) {
        baseline.push_back(run_side(suite, options, options.baseline, r));
      } else {
        current.push_back(run_side(suite, options, options.current, r));
      }
    }
    if (options.on_round) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      options.on_round(r + 1, options.rounds, elapsed.count());
    }
  }
  return {merge_side(baseline, options.baseline, "baseline", order),
          merge_side(current, options.current, "current", order)};
}

}  // namespace hybrid::bench
