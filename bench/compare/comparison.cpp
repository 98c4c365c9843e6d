#include "bench/compare/comparison.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "base/statistics.h"
#include "bench/compare/statistics.h"

namespace hybrid::bench {

namespace {

bool is_calibration(const std::string& name, const CompareOptions& options) {
  return name.rfind(options.calibration_prefix, 0) == 0;
}

Verdict decide(double change, double p_value, const CompareOptions& options) {
  const bool significant = p_value < options.alpha;
  if (std::abs(change) <= options.threshold) return Verdict::NoChange;
  if (!significant) return Verdict::NotSignificant;
  return change > 0 ? Verdict::Regression : Verdict::Improvement;
}

// Per-round medians: the independent samples (benchmark_file.h).
std::vector<double> round_times(const BenchmarkSamples& b, Metric metric) {
  std::vector<double> out;
  for (const RoundSample& r : round_samples(b, metric)) out.push_back(r.time_ns);
  return out;
}

std::vector<double> scaled(const std::vector<double>& values, double factor) {
  std::vector<double> out(values);
  for (double& v : out) v /= factor;
  return out;
}

// Geometric mean of the calibration medians present in both runs (one per run).
std::optional<CalibrationInfo> find_calibration(const BenchmarkFile& baseline,
                                                const BenchmarkFile& current,
                                                const CompareOptions& options) {
  CalibrationInfo info;
  std::vector<double> base_medians, cur_medians;
  int slower = 0, faster = 0;
  for (const auto& b : baseline.benchmarks) {
    if (!is_calibration(b.name, options) || b.error) continue;
    const BenchmarkSamples* c = current.find(b.name);
    if (!c || c->error) continue;
    info.names.push_back(b.name);
    const std::vector<double> x = round_times(b, options.metric);
    const std::vector<double> y = round_times(*c, options.metric);
    base_medians.push_back(base::median(x));
    cur_medians.push_back(base::median(y));
    const double p = mann_whitney_u(y, x).p_value;
    info.p_value = info.names.size() == 1 ? p : std::max(info.p_value, p);
    if (p < options.calibration_alpha) {
      (cur_medians.back() > base_medians.back() ? slower : faster) += 1;
    }
  }
  if (info.names.empty()) return std::nullopt;
  info.baseline_ns = geometric_mean(base_medians);
  info.current_ns = geometric_mean(cur_medians);
  const int n = static_cast<int>(info.names.size());
  info.significant = slower == n || faster == n;
  info.applied = options.normalize && (info.significant || options.normalize_always);
  return info;
}

bool has_calibration(const BenchmarkFile& file, const CompareOptions& options) {
  for (const auto& b : file.benchmarks) {
    if (is_calibration(b.name, options) && !b.error) return true;
  }
  return false;
}

std::string context_string(const BenchmarkFile& file, const char* group, const char* key) {
  const nlohmann::json* node = &file.context;
  if (group) {
    auto it = file.context.find(group);
    if (it == file.context.end() || !it->is_object()) return {};
    node = &*it;
  }
  auto it = node->find(key);
  return it != node->end() && it->is_string() ? it->get<std::string>() : std::string();
}

void note_machine_differences(const BenchmarkFile& baseline, const BenchmarkFile& current,
                              ComparisonReport& report) {
  struct Field {
    const char* group;
    const char* key;
    const char* label;
  };
  const Field fields[] = {{"hybrid_machine", "cpu_model", "CPU model"},
                          {nullptr, "host_name", "host"},
                          {"hybrid_machine", "openblas_coretype", "OPENBLAS_CORETYPE"}};
  for (const auto& f : fields) {
    std::string a = context_string(baseline, f.group, f.key);
    std::string b = context_string(current, f.group, f.key);
    if (!a.empty() && !b.empty() && a != b) {
      report.notes.push_back(fmt::format(
          "{} differs between the runs ('{}' vs '{}'): absolute times are not comparable{}",
          f.label, a, b, report.options.normalize ? "; normalisation helps only partly" : ""));
    }
  }
}

}  // namespace

namespace {

// --normalize needs a calibration benchmark in each run.
void require_calibration(const BenchmarkFile& baseline, const BenchmarkFile& current,
                         const CompareOptions& options) {
  for (const BenchmarkFile* file : {&baseline, &current}) {
    if (!has_calibration(*file, options)) {
      throw std::runtime_error(fmt::format(
          "{}: --normalize needs a calibration benchmark (a name starting with '{}'), none found "
          "(add bench_calibration to the suite)",
          file->source, options.calibration_prefix));
    }
  }
}

bool use_paired(const CompareOptions& o) { return o.test == TestKind::Paired; }

BenchmarkComparison new_row(const BenchmarkSamples& b, const BenchmarkSamples& c,
                            const CompareOptions& options) {
  BenchmarkComparison row;
  row.name = b.name;
  row.baseline_median_ns = base::median(round_times(b, options.metric));
  row.current_median_ns = base::median(round_times(c, options.metric));
  row.raw_change = row.current_median_ns / row.baseline_median_ns - 1.0;
  return row;
}

// Per-round medians of each run, times divided by the runs' factors, Mann-Whitney U.
BenchmarkComparison compare_unpaired(const BenchmarkSamples& b, const BenchmarkSamples& c,
                                     const CompareOptions& options, double bf, double cf) {
  const std::vector<double> x = scaled(round_times(b, options.metric), bf);
  const std::vector<double> y = scaled(round_times(c, options.metric), cf);
  BenchmarkComparison row = new_row(b, c, options);
  row.baseline_repetitions = x.size();
  row.current_repetitions = y.size();
  row.change = base::median(y) / base::median(x) - 1.0;
  const MannWhitneyResult test = mann_whitney_u(y, x);
  row.p_value = test.p_value;
  row.method = test.method;
  row.significance_reachable = mann_whitney_min_p_value(static_cast<int>(y.size()),
                                                        static_cast<int>(x.size())) < options.alpha;
  return row;
}

// Round r of the current run against round r of the baseline (rounds in both only):
// the ratio of each pair, their median as the change, Wilcoxon signed-rank on the
// log ratios. Not normalised: the two halves of a pair ran seconds apart.
BenchmarkComparison compare_paired(const BenchmarkSamples& b, const BenchmarkSamples& c,
                                   const CompareOptions& options) {
  std::map<int, double> base_round;
  for (const RoundSample& r : round_samples(b, options.metric)) base_round[r.round] = r.time_ns;
  std::vector<double> ratios, log_ratios;
  for (const RoundSample& r : round_samples(c, options.metric)) {
    auto it = base_round.find(r.round);
    if (it == base_round.end()) continue;
    ratios.push_back(r.time_ns / it->second);
    log_ratios.push_back(std::log(ratios.back()));
  }
  if (ratios.empty()) {
    throw std::runtime_error(fmt::format(
        "benchmark '{}': --test paired needs rounds present in both runs, none are", b.name));
  }
  BenchmarkComparison row = new_row(b, c, options);
  row.paired = true;
  row.pairs = ratios.size();
  row.baseline_repetitions = base_round.size();
  row.current_repetitions = round_samples(c, options.metric).size();
  row.change = base::median(ratios) - 1.0;
  const WilcoxonResult test = wilcoxon_signed_rank(log_ratios);
  row.p_value = test.p_value;
  row.method = test.exact ? MannWhitneyMethod::Exact : MannWhitneyMethod::Asymptotic;
  row.significance_reachable = wilcoxon_min_p_value(static_cast<int>(row.pairs)) < options.alpha;
  return row;
}

BenchmarkComparison compare_one(const BenchmarkSamples& b, const BenchmarkSamples& c,
                                const CompareOptions& options, double bf, double cf) {
  BenchmarkComparison row =
      use_paired(options) ? compare_paired(b, c, options) : compare_unpaired(b, c, options, bf, cf);
  row.p_adjusted = row.p_value;
  row.verdict = decide(row.change, row.p_value, options);
  return row;
}

// A note, once per pair of repetition counts, that such a row can never be flagged.
void note_unreachable(const BenchmarkComparison& row, const CompareOptions& options,
                      std::set<std::string>& noted, std::vector<std::string>& notes) {
  const std::size_t nx = row.baseline_repetitions, ny = row.current_repetitions;
  if (row.significance_reachable) return;
  if (row.paired) {
    if (!noted.insert(fmt::format("pairs {}", row.pairs)).second) return;
    int needed = 2;
    while (needed < 60 && wilcoxon_min_p_value(needed) >= options.alpha) ++needed;
    notes.push_back(fmt::format(
        "{} paired rounds can never reach p < {} (smallest possible p = {:.3f}): such benchmarks "
        "are never flagged; use at least {} rounds",
        row.pairs, options.alpha, wilcoxon_min_p_value(static_cast<int>(row.pairs)), needed));
    return;
  }
  if (!noted.insert(fmt::format("{}/{}", nx, ny)).second) return;
  const double min_p = mann_whitney_min_p_value(static_cast<int>(ny), static_cast<int>(nx));
  int needed = 2;
  while (needed < 1000 && mann_whitney_min_p_value(needed, needed) >= options.alpha) ++needed;
  notes.push_back(fmt::format(
      "{} vs {} rounds can never reach p < {} (smallest possible p = {:.3f}): such benchmarks "
      "are never flagged; use at least {} rounds each (one round is one process: its "
      "repetitions are not independent samples; collect rounds with hybrid-bench ab)",
      nx, ny, options.alpha, min_p, needed));
}

// Holm's correction (when asked for) over the rows, then the counts of verdicts.
void adjust_and_count(ComparisonReport& report, const CompareOptions& options) {
  if (options.correction == Correction::Holm && !report.rows.empty()) {
    std::vector<double> p;
    for (const auto& row : report.rows) p.push_back(row.p_value);
    const std::vector<double> adjusted = holm_adjusted(p);
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      report.rows[i].p_adjusted = adjusted[i];
      report.rows[i].verdict = decide(report.rows[i].change, adjusted[i], options);
    }
  }
  for (const auto& row : report.rows) {
    if (row.verdict == Verdict::Regression) ++report.regressions;
    if (row.verdict == Verdict::Improvement) ++report.improvements;
  }
}

// The machine's speed moved by a good part of the threshold but was not divided out:
// verdicts then mix machine and code. Paired rows are immune (their halves ran
// seconds apart); unpaired ones are not.
void note_calibration(ComparisonReport& report, const CompareOptions& options) {
  const auto& cal = report.calibration;
  bool unpaired = false, paired = false;
  for (const auto& row : report.rows) (row.paired ? paired : unpaired) = true;
  if (paired && options.normalize) {
    report.notes.push_back(
        "paired rows are not normalised: both halves of a pair ran seconds apart, and "
        "dividing by a calibration ratio would only add its noise");
  }
  if (!cal || cal->applied || !unpaired) return;
  const double moved = cal->speed_ratio() - 1.0;
  if (std::abs(moved) <= options.threshold / 2) return;
  report.notes.push_back(fmt::format(
      "the calibration moved {:+.1f}% between the runs{}: the machine's speed changed by a "
      "good part of the threshold, so unpaired verdicts mix machine and code; compare runs "
      "collected in alternated rounds (hybrid-bench ab)",
      moved * 100,
      options.normalize
          ? fmt::format(" (not significant at {}, not divided out)", options.calibration_alpha)
          : ""));
}

}  // namespace

ComparisonReport compare_runs(const BenchmarkFile& baseline, const BenchmarkFile& current,
                              const CompareOptions& options) {
  validate(options);
  ComparisonReport report;
  report.options = options;
  report.baseline_source = baseline.source;
  report.current_source = current.source;
  if (options.normalize) require_calibration(baseline, current, options);
  report.calibration = find_calibration(baseline, current, options);
  if (options.normalize && !report.calibration) {
    throw std::runtime_error(fmt::format(
        "{} and {}: --normalize needs a calibration benchmark present in both runs; their "
        "calibration benchmarks have different names",
        baseline.source, current.source));
  }
  const bool apply = options.normalize && report.calibration->applied;
  const double base_factor = apply ? report.calibration->baseline_ns : 1.0;
  const double cur_factor = apply ? report.calibration->current_ns : 1.0;

  std::set<std::string> too_few_noted;
  std::vector<double> ratios;
  for (const auto& b : baseline.benchmarks) {
    const BenchmarkSamples* c = current.find(b.name);
    if (!c) {
      report.missing.push_back(b.name);
      continue;
    }
    if (b.error || c->error) {
      const BenchmarkSamples& bad = b.error ? b : *c;
      report.errored.push_back(fmt::format("{}: {} ({})", b.name, bad.error_message,
                                           b.error ? baseline.source : current.source));
      continue;
    }
    // The calibration is compared raw: dividing it by itself would always give 1.
    const bool calibration = is_calibration(b.name, options);
    BenchmarkComparison row = compare_one(b, *c, options, calibration ? 1.0 : base_factor,
                                          calibration ? 1.0 : cur_factor);
    note_unreachable(row, options, too_few_noted, report.notes);
    if (calibration) {
      report.calibration_rows.push_back(row);
      continue;
    }
    ratios.push_back(1.0 + row.change);
    report.rows.push_back(std::move(row));
  }
  adjust_and_count(report, options);
  for (const auto& c : current.benchmarks) {
    if (!baseline.find(c.name)) report.added.push_back(c.name);
  }
  if (!ratios.empty()) report.geomean_ratio = geometric_mean(ratios);
  note_calibration(report, options);
  if (report.rows.empty()) {
    report.notes.push_back("no benchmark is present in both runs: nothing was compared");
  }
  note_machine_differences(baseline, current, report);
  return report;
}

}  // namespace hybrid::bench
