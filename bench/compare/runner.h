// `hybrid-bench run`: runs every entry of a suite (any Google Benchmark executable)
// with JSON output and all repetitions kept, and merges the outputs into one Google
// Benchmark JSON document that `hybrid-bench compare` (or Google Benchmark's own
// tools/compare.py) reads. The merged context is the first executable's, plus
// `hybrid_machine` (CPU, flags, OPENBLAS_CORETYPE, host, date, git revision) and
// `hybrid_suite` (what was run, how, and how long it took).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bench/compare/suite.h"

namespace hybrid::bench {

struct RunOptions {
  std::filesystem::path executable_dir;  // where the bench_* executables were built
  std::optional<int> repetitions;        // overrides every entry's repetitions
  std::filesystem::path source_dir;      // git checkout recorded in hybrid_machine
  std::string mpiexec = "mpirun";
  std::ostream* progress = nullptr;  // progress and ETA lines; nullptr: silent
  // Variables for every entry, over the entries' own (hybrid-bench ab --current-env).
  std::vector<std::pair<std::string, std::string>> env;
  int round = 0;  // written as "hybrid_round" on every repetition: one run is one round
};

// An absolute path as it is; otherwise `dir/name`, then `dir/bench/name`. Throws
// std::runtime_error naming the executable and the folders searched.
std::filesystem::path find_executable(const std::string& name, const std::filesystem::path& dir);

// The command line for one entry (mpirun prefix included when the entry asks for it).
std::vector<std::string> benchmark_command(const SuiteEntry& entry, int repetitions,
                                           const std::filesystem::path& executable,
                                           const std::filesystem::path& out_file,
                                           const std::string& mpiexec);

// Context of the first output, benchmarks of all, in order. A benchmark that appears
// in several outputs (the calibration run at the start and at the end of a suite)
// keeps all its repetitions: their repetition_index is renumbered to stay unique
// and their now-partial aggregates are dropped. Each entry gets "hybrid_executable".
nlohmann::json merge_benchmark_outputs(const std::vector<nlohmann::json>& outputs,
                                       const std::vector<std::string>& executable_names);

// Several runs (rounds) merged into one: every repetition keeps a distinct
// "hybrid_round" (input i's rounds renumbered after those of inputs 0..i-1; an input
// without round tags is one round), and the context is the first input's.
nlohmann::json merge_rounds(const std::vector<nlohmann::json>& runs);

// Runs the suite; throws std::runtime_error naming the entry when an executable is
// missing, fails, times out, or its filter matches no benchmark.
nlohmann::json run_suite(const Suite& suite, const RunOptions& options);

}  // namespace hybrid::bench
