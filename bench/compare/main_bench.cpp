// hybrid-bench: run benchmark suites and compare runs with a statistical test.
//
//   hybrid-bench run --suite ci [--out FILE.json] [--repetitions N] [--update-baseline]
//   hybrid-bench ab --suite ci --baseline-build OLD/build [--current-build build]
//                   [--rounds 10] [--current-env VAR=VALUE] [--out-dir DIR] [compare options]
//   hybrid-bench compare BASE.json NEW.json [--threshold 10%] [--alpha 0.05] [--normalize]
//                        [--metric auto|real_time|cpu_time] [--correction holm|none]
//                        [--test unpaired|paired] [--markdown FILE] [--json FILE]
//   hybrid-bench merge --out ALL.json RUN1.json RUN2.json ...
//   hybrid-bench list
//
// Exit codes: 0 success / no regression, 1 at least one regression (compare),
// 2 any error (bad arguments, unreadable input, a failing benchmark).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "base/atomic_file.h"
#include "base/cli_checks.h"
#include "bench/compare/ab_runner.h"
#include "bench/compare/benchmark_file.h"
#include "bench/compare/comparison.h"
#include "bench/compare/machine_info.h"
#include "bench/compare/report.h"
#include "bench/compare/runner.h"
#include "bench/compare/suite.h"

namespace fs = std::filesystem;
using namespace hybrid::bench;

namespace {

constexpr int kExitError = 2;

fs::path source_dir() { return fs::path(HYBRID_SOURCE_DIR); }

// bench_* executables are built next to hybrid-bench.
fs::path own_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

// The defaults are the safe ones on a shared runner (docs/bench.md): 10 %, Holm,
// the suite's metric, rounds (not repetitions) as samples.
struct CompareArgs {
  std::string baseline, current;
  std::string threshold = "10%";
  double alpha = 0.05;
  double calibration_alpha = 0.01;
  bool normalize = false;
  bool normalize_always = false;
  std::string metric = "auto";
  std::string correction = "holm";
  std::string test = "unpaired";
  std::string markdown, json;
  std::string calibration_prefix = "calibration/";
  bool quiet = false;
};

CompareOptions compare_options(const CompareArgs& a) {
  CompareOptions options;
  options.threshold = parse_threshold(a.threshold);
  options.alpha = a.alpha;
  options.calibration_alpha = a.calibration_alpha;
  options.normalize = a.normalize || a.normalize_always;
  options.normalize_always = a.normalize_always;
  if (a.metric != "auto") options.metric = parse_metric(a.metric);
  options.correction = parse_correction(a.correction);
  options.test = parse_test_kind(a.test);
  options.calibration_prefix = a.calibration_prefix;
  validate(options);
  return options;
}

// Compares, prints and writes the reports; the exit code of `compare`.
int compare_and_report(const BenchmarkFile& baseline, const BenchmarkFile& current,
                       const CompareArgs& a) {
  CompareOptions options = compare_options(a);
  std::string metric_note;
  if (a.metric == "auto") options.metric = default_metric(baseline, current, &metric_note);
  ComparisonReport report = compare_runs(baseline, current, options);
  if (!metric_note.empty()) report.notes.push_back(metric_note);
  if (!a.quiet) std::cout << render_table(report) << std::flush;
  if (!a.markdown.empty()) hybrid::base::write_file_atomic(a.markdown, render_markdown(report));
  if (!a.json.empty())
    hybrid::base::write_file_atomic(a.json, report_to_json(report).dump(2) + "\n");
  return report.exit_code();
}

int do_compare(const CompareArgs& a) {
  compare_options(a);  // bad options fail before any file is read
  return compare_and_report(load_benchmark_file(a.baseline), load_benchmark_file(a.current), a);
}

struct RunArgs {
  std::string suite;
  std::string out;
  int repetitions = 0;
  bool update_baseline = false;
  std::string build_dir;
  std::string suites_file = (source_dir() / "bench" / "suites.json").string();
  std::string baseline_dir = (source_dir() / "results" / "baselines").string();
  std::string mpiexec = HYBRID_MPIEXEC[0] ? HYBRID_MPIEXEC : "mpirun";
};

int do_run(const RunArgs& a) {
  const auto suites = load_suites(a.suites_file);
  const Suite& suite = find_suite(suites, a.suite, a.suites_file);
  RunOptions options;
  options.executable_dir = a.build_dir.empty() ? own_dir() : fs::path(a.build_dir);
  if (a.repetitions > 0) options.repetitions = a.repetitions;
  options.source_dir = source_dir();
  options.mpiexec = a.mpiexec;
  options.progress = &std::cerr;

  const nlohmann::json result = run_suite(suite, options);
  if (a.repetitions == 1) {
    std::cerr << "note: 1 repetition per benchmark: merge several such runs (hybrid-bench merge) "
                 "before comparing\n";
  }
  const std::string text = result.dump(2) + "\n";
  fs::path out = a.out;
  if (out.empty() && !a.update_baseline) {
    std::string stamp = utc_timestamp();
    for (char& c : stamp) c = c == ':' ? '-' : c;
    out = source_dir() / "results" / "runs" / fmt::format("{}-{}.json", suite.name, stamp);
  }
  if (!out.empty()) {
    hybrid::base::write_file_atomic(out, text);
    std::cerr << "wrote " << out.string() << "\n";
  }
  if (a.update_baseline) {
    const fs::path baseline = fs::path(a.baseline_dir) / (suite.name + ".json");
    hybrid::base::write_file_atomic(baseline, text);
    std::cerr << "updated baseline " << baseline.string() << "\n";
  }
  return 0;
}

// Several runs of the same suite (rounds alternated with another build or setting)
// become one run with all their repetitions.
int do_merge(const std::string& out, const std::vector<std::string>& inputs) {
  std::vector<nlohmann::json> docs;
  for (const auto& in : inputs) {
    docs.push_back(read_json_file(in));
    parse_benchmark_json(docs.back(), in, 1);  // a round may hold a single repetition
  }
  nlohmann::json merged = merge_rounds(docs);
  merged["context"]["hybrid_merged_from"] = inputs;
  hybrid::base::write_file_atomic(out, merged.dump(2) + "\n");
  return 0;
}

int do_list(const std::string& suites_file) {
  for (const auto& [name, suite] : load_suites(suites_file)) {
    std::cout << fmt::format("{}: {} ({} entries, {} repetitions)\n", name, suite.description,
                             suite.entries.size(), suite.repetitions);
    for (const auto& e : suite.entries) {
      std::cout << fmt::format("  {} filter '{}' min_time {} s{}\n", e.executable, e.filter,
                               e.min_time_s,
                               e.mpirun_np ? fmt::format(" mpirun -np {}", e.mpirun_np) : "");
    }
  }
  return 0;
}

// The options of every command that compares (compare, ab).
void add_compare_options(CLI::App* compare, CompareArgs& ca) {
  compare
      ->add_option("--threshold", ca.threshold,
                   "Smallest relative change of the median that counts, e.g. 10% or 0.10")
      ->capture_default_str();
  compare->add_option("--alpha", ca.alpha, "Significance level of the test (paired or unpaired)")
      ->capture_default_str();
  compare->add_flag("--normalize", ca.normalize,
                    "Divide each run's times by its calibration median (cancels machine speed) "
                    "when the calibration changed significantly; unpaired rows only");
  compare->add_flag("--normalize-always", ca.normalize_always,
                    "Divide by the calibration median even when its change is not significant");
  compare
      ->add_option("--calibration-alpha", ca.calibration_alpha,
                   "Significance the calibration change needs to be divided out")
      ->capture_default_str();
  compare
      ->add_option("--metric", ca.metric,
                   "auto (the suite's \"metric\", else real_time), real_time or cpu_time")
      ->capture_default_str();
  compare
      ->add_option("--test", ca.test,
                   "unpaired (Mann-Whitney U on per-round medians) or paired (Wilcoxon "
                   "signed-rank on the ratios of rounds present in both runs)")
      ->capture_default_str();
  compare
      ->add_option("--correction", ca.correction,
                   "none, or holm: Holm-Bonferroni over the compared benchmarks, so alpha "
                   "bounds the chance of any false alarm in the run")
      ->capture_default_str();
  compare->add_option("--markdown", ca.markdown, "Also write a Markdown report (PR comment)");
  compare->add_option("--json", ca.json, "Also write a JSON report");
  compare
      ->add_option("--calibration-prefix", ca.calibration_prefix,
                   "Name prefix of calibration benchmarks")
      ->capture_default_str();
  compare->add_flag("--quiet", ca.quiet, "Do not print the table");
}

CLI::App* add_compare_command(CLI::App& app, CompareArgs& ca) {
  auto* compare = app.add_subcommand(
      "compare", "Compare two Google Benchmark JSON files (exit 1 on a regression)");
  compare->add_option("baseline", ca.baseline, "Baseline run (Google Benchmark JSON)")->required();
  compare->add_option("current", ca.current, "Current run (Google Benchmark JSON)")->required();
  add_compare_options(compare, ca);

  return compare;
}

CLI::App* add_run_command(CLI::App& app, RunArgs& ra) {
  auto* run = app.add_subcommand("run", "Run a benchmark suite and write one merged JSON file");
  run->add_option("--suite", ra.suite, "Suite name (see `hybrid-bench list`)")->required();
  run->add_option("--out", ra.out, "Output file (default results/runs/<suite>-<date>.json)");
  run->add_option("--repetitions", ra.repetitions,
                  "Repetitions for every entry (default: the suite's; 1 for a round to be merged)")
      ->check(hybrid::base::between(1, 1000000));
  run->add_flag("--update-baseline", ra.update_baseline,
                "Also write results/baselines/<suite>.json");
  run->add_option("--build-dir", ra.build_dir,
                  "Folder with the bench_* executables (default: next to hybrid-bench)");
  run->add_option("--suites", ra.suites_file, "Suite definitions")->capture_default_str();
  run->add_option("--baseline-dir", ra.baseline_dir, "Where --update-baseline writes")
      ->capture_default_str();
  run->add_option("--mpiexec", ra.mpiexec, "Launcher for entries with mpirun_np")
      ->capture_default_str();

  return run;
}

struct AbArgs {
  std::string suite;
  std::string baseline_build, current_build;
  int rounds = 10;
  int repetitions = 1;
  std::vector<std::string> baseline_env, current_env;
  std::string out_dir;
  std::string suites_file = (source_dir() / "bench" / "suites.json").string();
  std::string mpiexec = HYBRID_MPIEXEC[0] ? HYBRID_MPIEXEC : "mpirun";
  CompareArgs compare;
};

// "NAME=VALUE" pairs of --baseline-env / --current-env.
std::vector<std::pair<std::string, std::string>> parse_env(const std::vector<std::string>& items,
                                                           const char* option) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument(fmt::format("{} must be NAME=VALUE, got '{}'", option, item));
    }
    env.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return env;
}

// Baseline and current builds in alternated rounds, then the comparison.
int do_ab(const AbArgs& a) {
  compare_options(a.compare);  // bad options fail before minutes of measuring
  const auto suites = load_suites(a.suites_file);
  const Suite& suite = find_suite(suites, a.suite, a.suites_file);
  AbOptions options;
  options.baseline = {fs::path(a.baseline_build), parse_env(a.baseline_env, "--baseline-env")};
  options.current = {a.current_build.empty() ? own_dir() : fs::path(a.current_build),
                     parse_env(a.current_env, "--current-env")};
  options.rounds = a.rounds;
  options.repetitions = a.repetitions;
  options.run.source_dir = source_dir();
  options.run.mpiexec = a.mpiexec;
  options.on_round = [](int r, int n, double seconds) {
    std::cerr << fmt::format("round {}/{} done ({:.0f} s, about {:.0f} s left)\n", r, n, seconds,
                             seconds / r * (n - r));
  };
  std::cerr << fmt::format("suite '{}': {} alternated rounds of baseline {} and current {}\n",
                           suite.name, a.rounds, options.baseline.executable_dir.string(),
                           options.current.executable_dir.string());
  const AbRuns runs = run_ab(suite, options);
  if (!a.out_dir.empty()) {
    fs::create_directories(a.out_dir);
    hybrid::base::write_file_atomic(fs::path(a.out_dir) / "baseline.json", runs.baseline.dump(2));
    hybrid::base::write_file_atomic(fs::path(a.out_dir) / "current.json", runs.current.dump(2));
  }
  return compare_and_report(parse_benchmark_json(runs.baseline, "baseline (ab)"),
                            parse_benchmark_json(runs.current, "current (ab)"), a.compare);
}

CLI::App* add_ab_command(CLI::App& app, AbArgs& aa) {
  auto* ab = app.add_subcommand(
      "ab",
      "Run a suite for a baseline and a current build in alternated rounds, then compare "
      "them (exit 1 on a regression): the recommended check on a shared machine");
  ab->add_option("--suite", aa.suite, "Suite name (see `hybrid-bench list`)")->required();
  ab->add_option("--baseline-build", aa.baseline_build,
                 "Folder with the baseline's bench_* executables (e.g. build-base/bench)")
      ->required();
  ab->add_option("--current-build", aa.current_build,
                 "Folder with the current bench_* executables (default: next to hybrid-bench)");
  ab->add_option("--rounds", aa.rounds, "Alternated rounds (each side runs once per round)")
      ->check(hybrid::base::between(2, 1000))
      ->capture_default_str();
  ab->add_option("--repetitions", aa.repetitions,
                 "Repetitions per benchmark and round (their median is the round's sample)")
      ->check(hybrid::base::between(1, 1000))
      ->capture_default_str();
  ab->add_option("--baseline-env", aa.baseline_env, "NAME=VALUE for the baseline's runs");
  ab->add_option("--current-env", aa.current_env,
                 "NAME=VALUE for the current runs (e.g. the test hook HYBRID_BENCH_SLOWDOWN)");
  ab->add_option("--out-dir", aa.out_dir, "Also keep baseline.json and current.json here");
  ab->add_option("--suites", aa.suites_file, "Suite definitions")->capture_default_str();
  ab->add_option("--mpiexec", aa.mpiexec, "Launcher for entries with mpirun_np")
      ->capture_default_str();
  add_compare_options(ab, aa.compare);
  return ab;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-bench: run Google Benchmark suites and compare runs for regressions"};
  app.require_subcommand(1);
  CompareArgs ca;
  auto* compare = add_compare_command(app, ca);
  RunArgs ra;
  auto* run = add_run_command(app, ra);
  AbArgs aa;
  auto* ab = add_ab_command(app, aa);

  std::string merge_out;
  std::vector<std::string> merge_inputs;
  auto* merge = app.add_subcommand(
      "merge",
      "Merge runs of one suite (e.g. alternated rounds) into one run with every repetition");
  merge->add_option("--out", merge_out, "Merged output file")->required();
  merge->add_option("inputs", merge_inputs, "Google Benchmark JSON files")
      ->required()
      ->expected(1, -1);

  std::string list_suites = ra.suites_file;
  auto* list = app.add_subcommand("list", "List the suites");
  list->add_option("--suites", list_suites, "Suite definitions")->capture_default_str();

  // Never 1 for a bad argument: that means "regression".
  if (auto status = hybrid::base::parse_command_line(app, argc, argv, kExitError)) return *status;

  try {
    if (compare->parsed()) return do_compare(ca);
    if (run->parsed()) return do_run(ra);
    if (ab->parsed()) return do_ab(aa);
    if (merge->parsed()) return do_merge(merge_out, merge_inputs);
    if (list->parsed()) return do_list(list_suites);
  } catch (const std::exception& e) {
    std::cerr << "hybrid-bench: " << e.what() << "\n";
    return kExitError;
  }
  return kExitError;
}
