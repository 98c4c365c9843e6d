// Benchmark suites: which Google Benchmark executables a `hybrid-bench run` runs,
// with which filter, minimum time and repetitions. Defined in bench/suites.json:
//
//   {"suites": {"ci": {"description": "...", "repetitions": 10, "entries": [
//       {"executable": "bench_calibration", "filter": "^calibration/", "min_time": 0.05},
//       {"executable": "bench_comm", "filter": "all_reduce", "mpirun_np": 2}]}}}
//
// Entry keys: executable (required), filter (default "."), min_time (seconds,
// default 0.1), repetitions (overrides the suite's), mpirun_np (run under
// `mpirun -np N`; the executable must write its output from rank 0 only),
// interleave (Google Benchmark's random interleaving of repetitions; default
// true, false under mpirun), min_warmup_time (seconds), timeout_s (default 600), args (extra
// arguments), env (variables set for the executable, e.g. {"OMP_NUM_THREADS": "1"}).
// Suite keys: description, repetitions, metric (real_time | cpu_time: compare's default
// for runs of the suite), entries.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybrid::bench {

struct SuiteEntry {
  std::string executable;
  std::string filter = ".";
  double min_time_s = 0.1;
  std::optional<int> repetitions;
  int mpirun_np = 0;       // 0: run directly
  bool interleave = true;  // parse: default false under mpirun
  std::optional<double> min_warmup_time_s;
  double timeout_s = 600;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
};

struct Suite {
  std::string name;
  std::string description;
  int repetitions = 10;
  // "real_time" | "cpu_time": what `compare` judges by default ("metric"; empty:
  // real_time). cpu_time suits single-threaded suites on a shared machine.
  std::string metric;
  std::vector<SuiteEntry> entries;

  int repetitions_for(const SuiteEntry& entry) const {
    return entry.repetitions.value_or(repetitions);
  }
};

// Parses the document; `source` names it in errors, which also name the key at
// fault ("bench/suites.json: suites.ci.entries[1].min_time must be a positive number").
std::map<std::string, Suite> parse_suites(const nlohmann::json& doc, const std::string& source);
std::map<std::string, Suite> load_suites(const std::filesystem::path& path);

// The named suite; throws naming the file and listing the suites that exist.
const Suite& find_suite(const std::map<std::string, Suite>& suites, const std::string& name,
                        const std::string& source);

}  // namespace hybrid::bench
