// Reading Google Benchmark JSON output (--benchmark_format=json or --benchmark_out).
//
// The comparer needs every repetition, so files must come from runs with
// --benchmark_repetitions=N and without --benchmark_report_aggregates_only: the
// "iteration" entries are the samples; "aggregate" entries (mean, median, stddev,
// cv, BigO) are derived and ignored. Repetitions are grouped by run_name (the name
// without the aggregate suffix) and every time is converted to nanoseconds.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::bench {

// Which of Google Benchmark's two times the comparison uses.
enum class Metric { RealTime, CpuTime };

Metric parse_metric(std::string_view text);  // "real_time" | "cpu_time"
std::string_view metric_name(Metric metric);

// All repetitions of one benchmark in one file.
struct BenchmarkSamples {
  std::string name;                  // run_name, e.g. "matmul/768/3072/real_time"
  std::vector<double> real_time_ns;  // one per repetition, in repetition order
  std::vector<double> cpu_time_ns;
  // Round (process) of each repetition, from "hybrid_round" (written by hybrid-bench
  // run, merge and ab); empty when the file has none: each repetition is then taken
  // as its own round, except in a run of an older hybrid-bench run (context
  // hybrid_suite, not merged), which is one round. Repetitions of one process share its luck (vCPU,
  // memory layout, neighbours), so the round, not the repetition, is the independent sample.
  std::vector<int> rounds;
  std::string time_unit = "ns";  // unit the file used, for display
  int threads = 1;
  bool error = false;  // the benchmark called SkipWithError
  std::string error_message;

  const std::vector<double>& samples(Metric metric) const {
    return metric == Metric::RealTime ? real_time_ns : cpu_time_ns;
  }
  std::size_t repetitions() const { return real_time_ns.size(); }
};

struct BenchmarkFile {
  std::string source;  // file path (or a label) for messages
  nlohmann::json context = nlohmann::json::object();
  std::vector<BenchmarkSamples> benchmarks;  // in order of first appearance

  const BenchmarkSamples* find(std::string_view name) const;
};

// One independent sample of a benchmark: the median of one round's repetitions.
struct RoundSample {
  int round = 0;
  double time_ns = 0;
};

// Per-round medians of `metric`, ordered by round; without round tags, one sample
// per repetition (round = its index).
std::vector<RoundSample> round_samples(const BenchmarkSamples& b, Metric metric);

// Nanoseconds per unit for Google Benchmark's time_unit strings; throws on others.
double time_unit_to_ns(std::string_view unit);

// Parses an already-loaded document; `source` names it in error messages.
// Throws std::runtime_error naming the source when the document is not Google
// Benchmark output, has no benchmarks, or a benchmark has fewer than
// `min_repetitions` repetitions (2 for a comparison; 1 for a round that will be merged).
BenchmarkFile parse_benchmark_json(const nlohmann::json& doc, const std::string& source,
                                   std::size_t min_repetitions = 2);

// Reads and parses a file; errors name the path (missing, unreadable, not JSON, ...).
BenchmarkFile load_benchmark_file(const std::filesystem::path& path);

// Reads any JSON file, with errors that name the path.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace hybrid::bench
