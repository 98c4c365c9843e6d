// What every benchmark suite's main shares once its benchmarks are registered:
// Google Benchmark initialised with the arguments the suite left, unknown flags
// refused, the runs, the suite's own summary after Google Benchmark's table; and
// the suite's own "--name value" flags, taken out of argv before that.
//
//   int main(int argc, char** argv) {
//     hybrid::bench::SuiteArgs args(argc, argv, {"--keep"});
//     if (const std::string* keep = args.value("--keep")) g_keep = *keep;
//     benchmark::RegisterBenchmark(...);
//     return hybrid::bench::run_suite(args.argc(), args.argv(), summary);
//   }
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::bench {

// Drops Google Benchmark's report of the runs: ranks other than 0 of an MPI
// suite run every benchmark (the collectives need them) but print nothing.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// A suite's own steps around the runs.
struct SuiteSteps {
  // Once Google Benchmark has read its flags, before the runs (opening what the
  // benchmarks share); an exit code returned ends the suite there.
  std::function<std::optional<int>()> before;
  // After the runs: the suite's figures and ratios below Google Benchmark's table.
  std::function<void()> summary;
  // Print the runs (--benchmark_out is written either way); false on ranks other
  // than 0 of an MPI suite.
  bool report = true;
};

// Initialises Google Benchmark with argv, refuses flags it does not know, runs
// the registered benchmarks between the suite's steps and shuts Google
// Benchmark down. Returns main's exit code: 1 for an unknown flag, the one
// `before` gave, else 0.
int run_suite(int argc, char** argv, const SuiteSteps& steps);
// The same with a summary only (most suites).
int run_suite(int argc, char** argv, const std::function<void()>& summary = {});

// A suite's own flags, each "--name value" (the last one given wins), taken out
// of argv; the rest, argv[0] first, is what Google Benchmark reads. A flag
// without its value stays in the rest, where Google Benchmark refuses it.
class SuiteArgs {
 public:
  SuiteArgs(int argc, char** argv, std::initializer_list<std::string_view> own_flags);
  // The flag's value, or nullptr when it was not given.
  const std::string* value(std::string_view flag) const;
  int argc() const { return int(rest_.size()) - 1; }
  char** argv() { return rest_.data(); }

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::vector<char*> rest_;  // null-terminated, as argv is
};

// `text` as a whole number from `lo` to `hi`; otherwise prints
// "<suite>: <flag> wants a whole number from <lo> to <hi>, got '<text>'" to
// stderr and returns nothing.
std::optional<int> whole_number_flag(const char* suite, const char* flag, const std::string& text,
                                     int lo, int hi);

}  // namespace hybrid::bench
