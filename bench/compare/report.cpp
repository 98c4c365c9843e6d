#include "bench/compare/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hybrid::bench {

namespace {

std::string format_p(double p) {
  if (p < 1e-4) return fmt::format("{:.1e}", p);
  return fmt::format("{:.4f}", p);
}

std::string summary_line(const ComparisonReport& r) {
  auto plural = [](int n, const char* word) {
    return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
  };
  return fmt::format("{}, {}, {} compared; geomean of median ratios {:.3f} ({})",
                     plural(r.regressions, "regression"), plural(r.improvements, "improvement"),
                     r.rows.size(), r.geomean_ratio, format_change(r.geomean_ratio - 1.0));
}

// Normalisation applies to unpaired rows only: a report of paired rows has no
// normalised column.
bool shows_normalisation(const ComparisonReport& r) {
  if (!r.options.normalize) return false;
  for (const auto& row : r.rows) {
    if (!row.paired) return true;
  }
  return r.rows.empty();
}

std::string test_name(const BenchmarkComparison& row) {
  const bool exact = row.method == MannWhitneyMethod::Exact;
  if (row.paired) return exact ? "wilcoxon-signed-rank-exact" : "wilcoxon-signed-rank-asymptotic";
  return exact ? "mann-whitney-exact" : "mann-whitney-asymptotic";
}

// "paired (Wilcoxon signed-rank over 10 rounds)", "unpaired (Mann-Whitney U)" or both.
std::string test_line(const ComparisonReport& r) {
  std::size_t paired = 0, pairs = 0;
  for (const auto& row : r.rows) {
    if (row.paired) {
      ++paired;
      pairs = std::max(pairs, row.pairs);
    }
  }
  const std::string p = fmt::format("paired rounds (Wilcoxon signed-rank, {} pairs)", pairs);
  const std::string u = "unpaired rounds (Mann-Whitney U)";
  if (paired == 0) return u;
  if (paired == r.rows.size()) return p;
  return fmt::format("{} for {} benchmarks, {} for the others", p, paired, u);
}

std::string options_line(const ComparisonReport& r) {
  return fmt::format("{}; metric {}, threshold {:.1f}%, alpha {}{}, {}", test_line(r),
                     metric_name(r.options.metric), r.options.threshold * 100, r.options.alpha,
                     r.options.correction == Correction::Holm ? " (Holm-corrected)" : "",
                     !shows_normalisation(r) ? "not normalised"
                     : r.options.normalize_always
                         ? "normalised by calibration (always)"
                         : "normalised by calibration when it changed significantly");
}

std::string calibration_line(const ComparisonReport& r) {
  if (!r.calibration) return {};
  const auto& c = *r.calibration;
  std::string what = !r.options.normalize ? "not divided out"
                     : c.applied          ? "divided out"
                                          : "not significant, not divided out";
  return fmt::format(
      "calibration ({}): baseline {}, current {}, machine speed ratio {:.3f}, p {} ({})",
      fmt::join(c.names, ", "), format_time_ns(c.baseline_ns), format_time_ns(c.current_ns),
      c.speed_ratio(), format_p(c.p_value), what);
}

// Plain-text table with columns sized to their contents.
struct Table {
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right_aligned;

  std::string render() const {
    std::vector<std::size_t> width(right_aligned.size(), 0);
    for (const auto& row : rows) {
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      std::string line;
      for (std::size_t i = 0; i < rows[r].size(); ++i) {
        if (i) line += "  ";
        line += right_aligned[i] ? fmt::format("{:>{}}", rows[r][i], width[i])
                                 : fmt::format("{:<{}}", rows[r][i], width[i]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
      if (r == 0) {
        std::size_t total = 0;
        for (auto w : width) total += w;
        out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
      }
    }
    return out;
  }
};

std::vector<std::string> row_cells(const BenchmarkComparison& row, bool normalized, bool holm) {
  std::vector<std::string> cells = {row.name, format_time_ns(row.baseline_median_ns),
                                    format_time_ns(row.current_median_ns),
                                    format_change(row.change)};
  if (normalized) cells.push_back(format_change(row.raw_change));
  cells.push_back(format_p(row.p_value));
  if (holm) cells.push_back(format_p(row.p_adjusted));
  cells.push_back(fmt::format("{}/{}", row.baseline_repetitions, row.current_repetitions));
  cells.push_back(std::string(verdict_name(row.verdict)));
  return cells;
}

// The calibration measures the machine: its change describes the machine, never the code.
std::string calibration_label(const BenchmarkComparison& row) {
  switch (row.verdict) {
    case Verdict::Regression:
      return "calibration, not judged: machine slower";
    case Verdict::Improvement:
      return "calibration, not judged: machine faster";
    default:
      return "calibration, not judged";
  }
}

std::vector<std::string> header_cells(bool normalized, bool holm) {
  std::vector<std::string> h = {"Benchmark", "Baseline", "Current",
                                normalized ? "Change (norm.)" : "Change"};
  if (normalized) h.push_back("Raw change");
  h.push_back("p-value");
  if (holm) h.push_back("p (Holm)");
  h.insert(h.end(), {"Rounds", "Verdict"});
  return h;
}

nlohmann::json row_json(const BenchmarkComparison& row) {
  return {{"name", row.name},
          {"baseline_median_ns", row.baseline_median_ns},
          {"current_median_ns", row.current_median_ns},
          {"baseline_repetitions", row.baseline_repetitions},
          {"current_repetitions", row.current_repetitions},
          {"raw_change", row.raw_change},
          {"change", row.change},
          {"p_value", row.p_value},
          {"p_adjusted", row.p_adjusted},
          {"paired", row.paired},
          {"pairs", row.pairs},
          {"test", test_name(row)},
          {"significance_reachable", row.significance_reachable},
          {"verdict", verdict_name(row.verdict)}};
}

}  // namespace

std::string format_time_ns(double ns) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1.0, "ns"}};
  const double magnitude = std::abs(ns);
  for (const auto& u : units) {
    if (magnitude >= u.scale || u.scale == 1.0) {
      double v = ns / u.scale;
      int decimals = std::abs(v) >= 100 ? 0 : std::abs(v) >= 10 ? 1 : 2;
      return fmt::format("{:.{}f} {}", v, decimals, u.name);
    }
  }
  return fmt::format("{} ns", ns);
}

std::string format_change(double change) { return fmt::format("{:+.1f}%", change * 100.0); }

std::string render_table(const ComparisonReport& r) {
  const bool normalized = shows_normalisation(r);
  const bool holm = r.options.correction == Correction::Holm;
  std::string out = fmt::format("baseline: {}\ncurrent:  {}\n{}\n", r.baseline_source,
                                r.current_source, options_line(r));
  if (r.calibration) out += calibration_line(r) + "\n";
  out += "\n";

  Table table;
  table.rows.push_back(header_cells(normalized, holm));
  table.right_aligned.assign(table.rows[0].size(), true);
  table.right_aligned.front() = false;
  table.right_aligned.back() = false;
  for (const auto& row : r.rows) table.rows.push_back(row_cells(row, normalized, holm));
  for (const auto& row : r.calibration_rows) {
    auto cells = row_cells(row, normalized, holm);
    cells.back() = calibration_label(row);
    table.rows.push_back(std::move(cells));
  }
  out += table.render();

  auto list = [&out](const char* title, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += fmt::format("\n{} ({}):\n", title, names.size());
    for (const auto& n : names) out += "  " + n + "\n";
  };
  list("missing from the current run", r.missing);
  list("new in the current run", r.added);
  list("errored", r.errored);
  if (!r.notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& n : r.notes) out += "  " + n + "\n";
  }
  out += fmt::format("\n{}\n", summary_line(r));
  return out;
}

std::string render_markdown(const ComparisonReport& r) {
  const bool normalized = shows_normalisation(r);
  const bool holm = r.options.correction == Correction::Holm;
  std::string out = fmt::format("### Benchmark comparison: {}\n\n",
                                r.regressions ? "regression detected" : "no regression");
  out += summary_line(r) + ".  \n";
  out += options_line(r) + ".";
  if (r.calibration) out += fmt::format("  \n{}.", calibration_line(r));
  out += "\n\n";

  auto header = header_cells(normalized, holm);
  out += "| " + fmt::format("{}", fmt::join(header, " | ")) + " |\n|";
  for (std::size_t i = 0; i < header.size(); ++i)
    out += (i == 0 || i + 1 == header.size()) ? ":---|" : "---:|";
  out += "\n";
  auto emit = [&](const BenchmarkComparison& row, bool calibration) {
    auto cells = row_cells(row, normalized, holm);
    cells.front() = "`" + cells.front() + "`";
    if (row.verdict == Verdict::Regression || row.verdict == Verdict::Improvement) {
      cells.back() = "**" + cells.back() + "**";
    }
    if (calibration) cells.back() = calibration_label(row);
    out += "| " + fmt::format("{}", fmt::join(cells, " | ")) + " |\n";
  };
  for (const auto& row : r.rows) emit(row, false);
  for (const auto& row : r.calibration_rows) emit(row, true);

  auto list = [&out](const char* title, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += fmt::format("\n**{}** ({}): ", title, names.size());
    std::vector<std::string> quoted;
    for (const auto& n : names) quoted.push_back("`" + n + "`");
    out += fmt::format("{}\n", fmt::join(quoted, ", "));
  };
  list("Missing from the current run", r.missing);
  list("New in the current run", r.added);
  list("Errored", r.errored);
  if (!r.notes.empty()) {
    out += "\n";
    for (const auto& n : r.notes) out += "> " + n + "\n";
  }
  out += fmt::format("\n<sub>baseline `{}`, current `{}`</sub>\n", r.baseline_source,
                     r.current_source);
  return out;
}

nlohmann::json report_to_json(const ComparisonReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  nlohmann::json calibration_rows = nlohmann::json::array();
  for (const auto& row : r.calibration_rows) calibration_rows.push_back(row_json(row));
  nlohmann::json calibration = nullptr;
  if (r.calibration) {
    calibration = {
        {"benchmarks", r.calibration->names},      {"baseline_ns", r.calibration->baseline_ns},
        {"current_ns", r.calibration->current_ns}, {"speed_ratio", r.calibration->speed_ratio()},
        {"p_value", r.calibration->p_value},       {"significant", r.calibration->significant},
        {"applied", r.calibration->applied}};
  }
  return {{"baseline", r.baseline_source},
          {"current", r.current_source},
          {"options",
           {{"metric", metric_name(r.options.metric)},
            {"threshold", r.options.threshold},
            {"alpha", r.options.alpha},
            {"correction", correction_name(r.options.correction)},
            {"test", test_kind_name(r.options.test)},
            {"normalize", r.options.normalize},
            {"normalize_always", r.options.normalize_always},
            {"calibration_alpha", r.options.calibration_alpha},
            {"calibration_prefix", r.options.calibration_prefix}}},
          {"calibration", calibration},
          {"benchmarks", rows},
          {"calibration_benchmarks", calibration_rows},
          {"missing", r.missing},
          {"new", r.added},
          {"errored", r.errored},
          {"notes", r.notes},
          {"geomean_ratio", r.geomean_ratio},
          {"regressions", r.regressions},
          {"improvements", r.improvements},
          {"exit_code", r.exit_code()}};
}

}  // namespace hybrid::bench
