// `hybrid-bench ab`: a baseline and a current build of the same suite, measured in
// alternated rounds over the same minutes, so that a slow drift of a shared machine
// (other tenants' builds, frequency, cache and memory-bandwidth contention) hits
// both alike. Round r runs the suite once for each side, in the order AB, BA, AB, ...
// (ABBA: neither side is always first), with `repetitions` repetitions per
// benchmark; each side's rounds are merged with "hybrid_round" = r: the comparer
// takes each round as one sample (and, with --test paired, pairs round r with round r).
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench/compare/runner.h"
#include "bench/compare/suite.h"

namespace hybrid::bench {

struct AbSide {
  std::filesystem::path executable_dir;                  // the build's bench_* executables
  std::vector<std::pair<std::string, std::string>> env;  // e.g. a test hook for the injection
};

struct AbOptions {
  AbSide baseline, current;
  int rounds = 10;      // independent samples per side (one process per entry per round)
  int repetitions = 1;  // per benchmark and round; their median is the round's sample
  RunOptions run;       // source_dir, mpiexec; executable_dir, env and round are set per run
  // Called after each round with (round, rounds, seconds so far); may be empty.
  std::function<void(int, int, double)> on_round;
};

struct AbRuns {
  nlohmann::json baseline;  // every round of each side, merged (Google Benchmark JSON)
  nlohmann::json current;
};

// Throws std::invalid_argument for rounds < 2 or repetitions < 1, and whatever
// run_suite throws (naming the entry) when a run fails.
AbRuns run_ab(const Suite& suite, const AbOptions& options);

}  // namespace hybrid::bench
