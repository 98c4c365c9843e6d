// hybrid-bench: run benchmark suites and compare runs with a statistical test.
//
//   hybrid-bench run --suite ci [--out FILE.json] [--repetitions N] [--update-baseline]
//   hybrid-bench compare BASE.json NEW.json [--threshold 5%] [--alpha 0.05] [--normalize]
//                        [--metric real_time|cpu_time] [--correction none|holm]
//                        [--markdown FILE] [--json FILE]
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

struct CompareArgs {
  std::string baseline, current;
  std::string threshold = "5%";
  double alpha = 0.05;
  double calibration_alpha = 0.01;
  bool normalize = false;
  bool normalize_always = false;
  std::string metric = "real_time";
  std::string correction = "none";
  std::string markdown, json;
  std::string calibration_prefix = "calibration/";
  bool quiet = false;
};

int do_compare(const CompareArgs& a) {
  CompareOptions options;
  options.threshold = parse_threshold(a.threshold);
  options.alpha = a.alpha;
  options.calibration_alpha = a.calibration_alpha;
  options.normalize = a.normalize || a.normalize_always;
  options.normalize_always = a.normalize_always;
  options.metric = parse_metric(a.metric);
  options.correction = parse_correction(a.correction);
  options.calibration_prefix = a.calibration_prefix;
  validate(options);

  const BenchmarkFile baseline = load_benchmark_file(a.baseline);
  const BenchmarkFile current = load_benchmark_file(a.current);
  const ComparisonReport report = compare_runs(baseline, current, options);
  if (!a.quiet) std::cout << render_table(report) << std::flush;
  if (!a.markdown.empty()) hybrid::base::write_file_atomic(a.markdown, render_markdown(report));
  if (!a.json.empty())
    hybrid::base::write_file_atomic(a.json, report_to_json(report).dump(2) + "\n");
  return report.exit_code();
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
  nlohmann::json merged = merge_benchmark_outputs(docs, {});
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

CLI::App* add_compare_command(CLI::App& app, CompareArgs& ca) {
  auto* compare = app.add_subcommand(
      "compare", "Compare two Google Benchmark JSON files (exit 1 on a regression)");
  compare->add_option("baseline", ca.baseline, "Baseline run (Google Benchmark JSON)")->required();
  compare->add_option("current", ca.current, "Current run (Google Benchmark JSON)")->required();
  compare
      ->add_option("--threshold", ca.threshold,
                   "Smallest relative change of the median that counts, e.g. 5% or 0.05")
      ->capture_default_str();
  compare->add_option("--alpha", ca.alpha, "Significance level of the Mann-Whitney U test")
      ->capture_default_str();
  compare->add_flag("--normalize", ca.normalize,
                    "Divide each run's times by its calibration median (cancels machine speed) "
                    "when the calibration changed significantly");
  compare->add_flag("--normalize-always", ca.normalize_always,
                    "Divide by the calibration median even when its change is not significant");
  compare
      ->add_option("--calibration-alpha", ca.calibration_alpha,
                   "Significance the calibration change needs to be divided out")
      ->capture_default_str();
  compare->add_option("--metric", ca.metric, "real_time or cpu_time")->capture_default_str();
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

  return compare;
}

CLI::App* add_run_command(CLI::App& app, RunArgs& ra) {
  auto* run = app.add_subcommand("run", "Run a benchmark suite and write one merged JSON file");
  run->add_option("--suite", ra.suite, "Suite name (see `hybrid-bench list`)")->required();
  run->add_option("--out", ra.out, "Output file (default results/runs/<suite>-<date>.json)");
  run->add_option("--repetitions", ra.repetitions,
                  "Repetitions for every entry (default: the suite's; 1 for a round to be merged)")
      ->check(CLI::Range(1, 1000000));
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-bench: run Google Benchmark suites and compare runs for regressions"};
  app.require_subcommand(1);
  CompareArgs ca;
  auto* compare = add_compare_command(app, ca);
  RunArgs ra;
  auto* run = add_run_command(app, ra);

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitError;  // never 1: that means "regression"
  }

  try {
    if (compare->parsed()) return do_compare(ca);
    if (run->parsed()) return do_run(ra);
    if (merge->parsed()) return do_merge(merge_out, merge_inputs);
    if (list->parsed()) return do_list(list_suites);
  } catch (const std::exception& e) {
    std::cerr << "hybrid-bench: " << e.what() << "\n";
    return kExitError;
  }
  return kExitError;
}
