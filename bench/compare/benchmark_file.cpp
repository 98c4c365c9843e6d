#include "bench/compare/benchmark_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "base/statistics.h"

namespace hybrid::bench {

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", source, what));
}

// Old Google Benchmark versions wrote no run_type; their aggregates carry an
// aggregate_name (or a name suffix), everything else is a repetition.
bool is_aggregate(const nlohmann::json& entry) {
  if (auto it = entry.find("run_type"); it != entry.end() && it->is_string()) {
    return it->get<std::string>() == "aggregate";
  }
  return entry.contains("aggregate_name");
}

double number_field(const nlohmann::json& entry, const char* key, const std::string& source,
                    const std::string& name) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_number()) {
    fail(source, fmt::format("benchmark '{}' has no numeric \"{}\"", name, key));
  }
  return it->get<double>();
}

// Rounds count only when every repetition of a benchmark has one. A run written by an
// older hybrid-bench run (hybrid_suite, no rounds, not merged) is one round: its
// repetitions came from one process per entry.
void settle_rounds(BenchmarkFile& file) {
  bool any_rounds = false;
  for (auto& b : file.benchmarks) {
    if (std::find(b.rounds.begin(), b.rounds.end(), -1) != b.rounds.end()) b.rounds.clear();
    any_rounds = any_rounds || !b.rounds.empty();
  }
  if (!any_rounds && file.context.contains("hybrid_suite") &&
      !file.context.contains("hybrid_merged_from")) {
    for (auto& b : file.benchmarks) b.rounds.assign(b.real_time_ns.size(), 0);
  }
}

// An optional field of a result entry: `fallback` when absent or null; present with
// another type, an error naming the benchmark (json::value would throw type_error).
template <class T>
T optional_field(const nlohmann::json& entry, const char* key, T fallback,
                 const std::string& source, const std::string& name) {
  const auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) return fallback;
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>)
    ok = it->is_boolean();
  else if constexpr (std::is_same_v<T, std::string>)
    ok = it->is_string();
  else
    ok = it->is_number_integer();
  if (!ok)
    fail(source,
         fmt::format("benchmark '{}': \"{}\" has the wrong type: {}", name, key, it->dump()));
  return it->get<T>();
}

}  // namespace

Metric parse_metric(std::string_view text) {
  if (text == "real_time") return Metric::RealTime;
  if (text == "cpu_time") return Metric::CpuTime;
  throw std::invalid_argument(
      fmt::format("--metric must be real_time or cpu_time, got '{}'", text));
}

std::string_view metric_name(Metric metric) {
  return metric == Metric::RealTime ? "real_time" : "cpu_time";
}

const BenchmarkSamples* BenchmarkFile::find(std::string_view name) const {
  for (const auto& b : benchmarks) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

double time_unit_to_ns(std::string_view unit) {
  if (unit == "ns") return 1.0;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  throw std::invalid_argument(
      fmt::format("unknown time_unit '{}' (expected ns, us, ms or s)", unit));
}

namespace {

BenchmarkSamples& samples_named(BenchmarkFile& file, const std::string& name) {
  for (auto& b : file.benchmarks) {
    if (b.name == name) return b;
  }
  BenchmarkSamples b;
  b.name = name;
  file.benchmarks.push_back(std::move(b));
  return file.benchmarks.back();
}

// One repetition (a non-aggregate entry) of benchmark `b`: its times, or its error.
void add_repetition(BenchmarkSamples& b, const nlohmann::json& entry, const std::string& source) {
  const std::string& name = b.name;
  b.threads = optional_field(entry, "threads", 1, source, name);
  if (optional_field(entry, "error_occurred", false, source, name)) {
    b.error = true;
    b.error_message =
        optional_field(entry, "error_message", std::string("(no message)"), source, name);
    return;
  }
  std::string unit = optional_field(entry, "time_unit", std::string("ns"), source, name);
  double scale = 0;
  try {
    scale = time_unit_to_ns(unit);
  } catch (const std::exception& e) {
    fail(source, fmt::format("benchmark '{}': {}", name, e.what()));
  }
  b.time_unit = unit;
  b.real_time_ns.push_back(number_field(entry, "real_time", source, name) * scale);
  b.cpu_time_ns.push_back(number_field(entry, "cpu_time", source, name) * scale);
  auto round = entry.find("hybrid_round");
  b.rounds.push_back(round != entry.end() && round->is_number_integer() ? round->get<int>() : -1);
}

// Every benchmark has repetitions enough to compare; `aggregate_only` are names
// that appeared as aggregates (to tell the user why they have no samples).
void check_repetitions(const BenchmarkFile& file, const std::vector<std::string>& aggregate_only,
                       std::size_t min_repetitions, const std::string& source) {
  for (const auto& name : aggregate_only) {
    if (!file.find(name)) {
      fail(source,
           fmt::format("benchmark '{}' has only aggregates, no repetitions (run with "
                       "--benchmark_repetitions=N --benchmark_report_aggregates_only=false)",
                       name));
    }
  }
  for (const auto& b : file.benchmarks) {
    if (!b.error && b.repetitions() < min_repetitions) {
      fail(source,
           fmt::format("benchmark '{}' has {} repetition{}; the comparison needs at least {} "
                       "(run with --benchmark_repetitions=N, or merge several runs)",
                       b.name, b.repetitions(), b.repetitions() == 1 ? "" : "s", min_repetitions));
    }
  }
}

}  // namespace

BenchmarkFile parse_benchmark_json(const nlohmann::json& doc, const std::string& source,
                                   std::size_t min_repetitions) {
  if (!doc.is_object()) fail(source, "not Google Benchmark output (top level is not an object)");
  auto list = doc.find("benchmarks");
  if (list == doc.end() || !list->is_array()) {
    fail(source, "not Google Benchmark output (no \"benchmarks\" array)");
  }
  if (list->empty()) fail(source, "contains no benchmarks");

  BenchmarkFile file;
  file.source = source;
  if (auto ctx = doc.find("context"); ctx != doc.end() && ctx->is_object()) file.context = *ctx;

  std::vector<std::string> aggregate_only;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& entry = (*list)[i];
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      fail(source, fmt::format("benchmarks[{}] is not a Google Benchmark result (no \"name\")", i));
    }
    std::string name = optional_field(entry, "run_name", entry["name"].get<std::string>(), source,
                                      entry["name"].get<std::string>());
    if (is_aggregate(entry))
      aggregate_only.push_back(name);
    else
      add_repetition(samples_named(file, name), entry, source);
  }
  check_repetitions(file, aggregate_only, min_repetitions, source);
  settle_rounds(file);
  return file;
}

std::vector<RoundSample> round_samples(const BenchmarkSamples& b, Metric metric) {
  const std::vector<double>& times = b.samples(metric);
  std::vector<RoundSample> out;
  if (b.rounds.size() != times.size()) {
    for (std::size_t i = 0; i < times.size(); ++i) out.push_back({static_cast<int>(i), times[i]});
    return out;
  }
  std::map<int, std::vector<double>> by_round;
  for (std::size_t i = 0; i < times.size(); ++i) by_round[b.rounds[i]].push_back(times[i]);
  for (const auto& [round, values] : by_round) out.push_back({round, base::median(values)});
  return out;
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path.string(), "no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path.string(), "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), "cannot be opened for reading");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: 1e999
    fail(path.string(), fmt::format("not valid JSON ({})", e.what()));
  }
}

BenchmarkFile load_benchmark_file(const std::filesystem::path& path) {
  return parse_benchmark_json(read_json_file(path), path.string());
}

}  // namespace hybrid::bench
