#include "bench/compare/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "base/subprocess.h"
#include "base/units.h"
#include "bench/compare/benchmark_file.h"
#include "bench/compare/machine_info.h"

namespace hybrid::bench {

namespace fs = std::filesystem;

namespace {

// A private folder for the executables' raw outputs, removed however the run ends.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            fmt::format("hybrid-bench-{}-{}-{}", ::getpid(), counter++,
                        std::chrono::steady_clock::now().time_since_epoch().count());
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// How many benchmarks the filter selects, by asking the executable itself; nullopt
// for mpirun entries (listing would need the launcher) or when listing fails.
std::optional<int> count_benchmarks(const SuiteEntry& entry, const fs::path& executable,
                                    const fs::path& work) {
  if (entry.mpirun_np > 0) return std::nullopt;
  std::vector<std::string> argv = {executable.string(), "--benchmark_list_tests=true",
                                   "--benchmark_filter=" + entry.filter};
  argv.insert(argv.end(), entry.args.begin(), entry.args.end());
  const fs::path listing = work / "list.txt";
  base::SubprocessOptions o;
  o.stdout_file = listing;
  o.quiet_stderr = true;
  o.timeout_s = 60;
  o.env = entry.env;
  if (!base::run_subprocess(argv, o).ok()) return std::nullopt;
  std::ifstream in(listing);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) ++n;
  }
  return n;
}

// Google Benchmark grows the iteration count until one repetition lasts min_time,
// so a repetition costs about twice min_time (plus warm-up).
double estimate_seconds(const SuiteEntry& entry, int repetitions, int benchmarks) {
  const double per_rep = 2.0 * entry.min_time_s + entry.min_warmup_time_s.value_or(0.0);
  return benchmarks * repetitions * per_rep + 0.2;
}

nlohmann::json env_object(const std::vector<std::pair<std::string, std::string>>& env) {
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [k, v] : env) o[k] = v;
  return o;
}

}  // namespace

fs::path find_executable(const std::string& name, const fs::path& dir) {
  std::error_code ec;
  const fs::path p(name);
  if (p.is_absolute()) {
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p;
    throw std::runtime_error(
        fmt::format("benchmark executable {} does not exist or is not executable", name));
  }
  for (const fs::path& candidate : {dir / p, dir / "bench" / p}) {
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  throw std::runtime_error(fmt::format(
      "benchmark executable '{}' not found in {} or {} (build it: cmake --build BUILD --target {}, "
      "or pass --build-dir)",
      name, dir.string(), (dir / "bench").string(), p.filename().string()));
}

std::vector<std::string> benchmark_command(const SuiteEntry& entry, int repetitions,
                                           const fs::path& executable, const fs::path& out_file,
                                           const std::string& mpiexec) {
  std::vector<std::string> argv;
  if (entry.mpirun_np > 0) argv = {mpiexec, "-np", std::to_string(entry.mpirun_np)};
  argv.push_back(executable.string());
  argv.push_back("--benchmark_format=json");
  argv.push_back("--benchmark_out_format=json");
  argv.push_back("--benchmark_out=" + out_file.string());
  argv.push_back(fmt::format("--benchmark_repetitions={}", repetitions));
  argv.push_back("--benchmark_report_aggregates_only=false");
  argv.push_back("--benchmark_filter=" + entry.filter);
  argv.push_back(fmt::format("--benchmark_min_time={}", entry.min_time_s));
  if (entry.min_warmup_time_s) {
    argv.push_back(fmt::format("--benchmark_min_warmup_time={}", *entry.min_warmup_time_s));
  }
  if (entry.interleave) argv.push_back("--benchmark_enable_random_interleaving=true");
  argv.insert(argv.end(), entry.args.begin(), entry.args.end());
  return argv;
}

nlohmann::json merge_benchmark_outputs(const std::vector<nlohmann::json>& outputs,
                                       const std::vector<std::string>& executable_names) {
  if (outputs.empty()) throw std::invalid_argument("merge_benchmark_outputs: nothing to merge");
  // Which outputs each run name appears in, to find the ones to renumber.
  std::map<std::string, int> outputs_with;
  for (const auto& out : outputs) {
    std::map<std::string, bool> seen;
    for (const auto& b : out.at("benchmarks")) {
      seen[b.value("run_name", b.value("name", std::string()))] = true;
    }
    for (const auto& [name, yes] : seen) outputs_with[name] += 1;
  }

  nlohmann::json merged;
  merged["context"] = outputs.front().value("context", nlohmann::json::object());
  merged["benchmarks"] = nlohmann::json::array();
  std::map<std::string, int> next_index;  // per repeated run name
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (auto b : outputs[i].at("benchmarks")) {
      const std::string name = b.value("run_name", b.value("name", std::string()));
      if (i < executable_names.size()) b["hybrid_executable"] = executable_names[i];
      if (outputs_with[name] > 1) {
        if (b.value("run_type", std::string()) == "aggregate") continue;
        b["repetition_index"] = next_index[name]++;
      }
      merged["benchmarks"].push_back(std::move(b));
    }
  }
  for (auto& b : merged["benchmarks"]) {
    const std::string name = b.value("run_name", b.value("name", std::string()));
    if (outputs_with[name] > 1) b["repetitions"] = next_index[name];
  }
  return merged;
}

nlohmann::json merge_rounds(const std::vector<nlohmann::json>& runs) {
  std::vector<nlohmann::json> renumbered(runs);
  int next = 0;
  for (auto& run : renumbered) {
    std::map<int, int> ids;  // this input's round -> merged round
    for (auto& b : run.at("benchmarks")) {
      auto it = b.find("hybrid_round");
      const int own = it != b.end() && it->is_number_integer() ? it->get<int>() : 0;
      auto [pos, added] = ids.emplace(own, next);
      if (added) ++next;
      b["hybrid_round"] = pos->second;
    }
  }
  return merge_benchmark_outputs(renumbered, {});
}

namespace {

// One suite entry, resolved before anything runs.
struct Planned {
  const SuiteEntry* entry;
  fs::path executable;
  int repetitions;
  std::optional<int> count;  // benchmarks the filter selects; nullopt: unknown
  double estimate_s;
};

// Resolves every entry first: a missing executable or an empty filter fails
// before any time is spent.
std::vector<Planned> plan_suite(const Suite& suite, const RunOptions& options,
                                const fs::path& work) {
  std::vector<Planned> plan;
  for (std::size_t i = 0; i < suite.entries.size(); ++i) {
    const SuiteEntry& e = suite.entries[i];
    Planned p{&e, {}, options.repetitions.value_or(suite.repetitions_for(e)), std::nullopt, 0};
    if (p.repetitions < 1) {
      throw std::runtime_error(fmt::format("suite '{}': {} repetitions requested; at least 1",
                                           suite.name, p.repetitions));
    }
    try {
      p.executable = find_executable(e.executable, options.executable_dir);
    } catch (const std::exception& ex) {
      throw std::runtime_error(fmt::format("suite '{}' entry {}: {}", suite.name, i, ex.what()));
    }
    p.count = count_benchmarks(e, p.executable, work);
    if (p.count && *p.count == 0) {
      throw std::runtime_error(
          fmt::format("suite '{}' entry {} ({}): filter '{}' matches no benchmark", suite.name, i,
                      e.executable, e.filter));
    }
    p.estimate_s = estimate_seconds(e, p.repetitions, p.count.value_or(1));
    plan.push_back(std::move(p));
  }
  return plan;
}

struct EntryRun {
  nlohmann::json output;  // the executable's Google Benchmark JSON
  std::string command;
  double wall_s = 0;
};

// Runs entry i and reads its output; throws naming the entry when it fails.
EntryRun run_entry(const Suite& suite, std::size_t i, const Planned& p, const RunOptions& options,
                   const fs::path& work) {
  const SuiteEntry& e = *p.entry;
  const fs::path out_file = work / fmt::format("out{}.json", i);
  const std::vector<std::string> argv =
      benchmark_command(e, p.repetitions, p.executable, out_file, options.mpiexec);
  base::SubprocessOptions o;
  o.stdout_file = work / fmt::format("stdout{}.txt", i);
  o.timeout_s = e.timeout_s;
  o.env = e.env;
  o.env.insert(o.env.end(), options.env.begin(), options.env.end());  // later ones win
  const base::SubprocessResult r = base::run_subprocess(argv, o);
  EntryRun run{{}, base::shell_join(argv), r.wall_s};
  if (!r.ok()) {
    throw std::runtime_error(fmt::format("suite '{}' entry {} ({}) failed: {}\n  command: {}",
                                         suite.name, i, e.executable, r.describe(), run.command));
  }
  try {
    run.output = read_json_file(out_file);
    parse_benchmark_json(run.output, e.executable + " output",
                         1);  // validates: repetitions present
  } catch (const std::exception& ex) {
    throw std::runtime_error(fmt::format("suite '{}' entry {} ({}, filter '{}'): {}", suite.name, i,
                                         e.executable, e.filter, ex.what()));
  }
  return run;
}

nlohmann::json entry_record(const Planned& p, const EntryRun& run) {
  const SuiteEntry& e = *p.entry;
  return {{"executable", e.executable},
          {"path", p.executable.string()},
          {"filter", e.filter},
          {"min_time", e.min_time_s},
          {"repetitions", p.repetitions},
          {"mpirun_np", e.mpirun_np},
          {"env", env_object(e.env)},
          {"command", run.command},
          {"wall_s", run.wall_s},
          {"context", run.output.value("context", nlohmann::json::object())}};
}

}  // namespace

nlohmann::json run_suite(const Suite& suite, const RunOptions& options) {
  TempDir work;
  auto say = [&options](const std::string& line) {
    if (options.progress) *options.progress << line << std::endl;
  };
  const std::vector<Planned> plan = plan_suite(suite, options, work.path());

  // Described before the run: the date and load average of its start.
  const nlohmann::json machine = describe_machine(options.source_dir);
  double remaining_estimate = 0;
  for (const auto& p : plan) remaining_estimate += p.estimate_s;
  say(fmt::format("suite '{}': {} executables, about {}", suite.name, plan.size(),
                  base::format_duration(remaining_estimate)));

  std::vector<nlohmann::json> outputs;
  std::vector<std::string> names;
  nlohmann::json entries_done = nlohmann::json::array();
  double measured_total = 0, estimated_total = 0;  // their ratio corrects the ETA
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const Planned& p = plan[i];
    const SuiteEntry& e = *p.entry;
    remaining_estimate -= p.estimate_s;
    say(fmt::format("[{}/{}] {} (filter '{}', {} benchmarks x {} repetitions){}", i + 1,
                    plan.size(), e.executable, e.filter, p.count ? std::to_string(*p.count) : "?",
                    p.repetitions,
                    e.mpirun_np ? fmt::format(" under mpirun -np {}", e.mpirun_np) : ""));
    EntryRun run = run_entry(suite, i, p, options, work.path());
    measured_total += run.wall_s;
    estimated_total += p.estimate_s;
    const double speed = measured_total / estimated_total;
    say(fmt::format("      done in {}; ETA {}", base::format_duration(run.wall_s),
                    base::format_duration(remaining_estimate * speed)));
    entries_done.push_back(entry_record(p, run));
    outputs.push_back(std::move(run.output));
    names.push_back(e.executable);
  }

  nlohmann::json merged = merge_benchmark_outputs(outputs, names);
  for (auto& b : merged["benchmarks"]) b["hybrid_round"] = options.round;
  merged["context"]["hybrid_machine"] = machine;
  merged["context"]["hybrid_suite"] = {
      {"name", suite.name},      {"description", suite.description},
      {"metric", suite.metric},  {"env", env_object(options.env)},
      {"entries", entries_done}, {"wall_s", measured_total}};
  return merged;
}

}  // namespace hybrid::bench
