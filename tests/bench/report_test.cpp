// The three renderings of a comparison carry the same facts: the terminal table,
// the Markdown for a pull-request comment, and the JSON for tools.
#include "bench/compare/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using testing::fixture;
using ::testing::HasSubstr;
using ::testing::Not;

ComparisonReport shifted() {
  return compare_runs(load_benchmark_file(fixture("base.json")),
                      load_benchmark_file(fixture("shift30.json")), {});
}

TEST(Report, TimeAndChangeFormatting) {
  EXPECT_EQ(format_time_ns(850), "850 ns");
  EXPECT_EQ(format_time_ns(12345), "12.3 us");
  EXPECT_EQ(format_time_ns(4.56e6), "4.56 ms");
  EXPECT_EQ(format_time_ns(1.2e9), "1.20 s");
  EXPECT_EQ(format_time_ns(0.5), "0.50 ns");
  EXPECT_EQ(format_change(0.3), "+30.0%");
  EXPECT_EQ(format_change(-0.042), "-4.2%");
}

TEST(Report, TableShowsVerdictsAndSummary) {
  ComparisonReport r = shifted();
  std::string t = render_table(r);
  EXPECT_THAT(t, HasSubstr("matmul/768x3072"));
  EXPECT_THAT(t, HasSubstr("REGRESSION"));
  EXPECT_THAT(t, HasSubstr("IMPROVEMENT"));
  EXPECT_THAT(t, HasSubstr("calibration/compute"));
  EXPECT_THAT(t, HasSubstr("calibration, not judged"));
  EXPECT_THAT(t, HasSubstr("1 regression, 1 improvement, 4 compared"));
  // The matmul line carries its own change, in its own row.
  auto line_start = t.find("matmul/768x3072");
  std::string line = t.substr(line_start, t.find('\n', line_start) - line_start);
  // +30 % within the fixture's 1 % noise.
  EXPECT_THAT(line, ::testing::ContainsRegex("\\+(29|30|31)\\.[0-9]%"));
  EXPECT_THAT(line, HasSubstr("REGRESSION"));
}

TEST(Report, MarkdownIsAWellFormedTable) {
  ComparisonReport r = shifted();
  std::string md = render_markdown(r);
  EXPECT_EQ(md.rfind("### Benchmark comparison: regression detected", 0), 0u);
  EXPECT_THAT(md, HasSubstr("| `matmul/768x3072` |"));
  EXPECT_THAT(md, HasSubstr("**REGRESSION**"));
  EXPECT_THAT(md, HasSubstr("**IMPROVEMENT**"));
  // Every table line has as many cells as the header.
  std::vector<std::string> lines;
  for (std::size_t p = 0, e; (e = md.find('\n', p)) != std::string::npos; p = e + 1) {
    lines.push_back(md.substr(p, e - p));
  }
  auto header = std::find_if(lines.begin(), lines.end(),
                             [](const std::string& l) { return l.rfind("| Benchmark", 0) == 0; });
  ASSERT_NE(header, lines.end());
  const auto cells = std::count(header->begin(), header->end(), '|');
  int table_lines = 0;
  for (auto it = header; it != lines.end() && !it->empty() && (*it)[0] == '|'; ++it) {
    EXPECT_EQ(std::count(it->begin(), it->end(), '|'), cells) << *it;
    ++table_lines;
  }
  EXPECT_EQ(table_lines, 2 + 4 + 1);  // header, separator, 4 benchmarks, the calibration
}

TEST(Report, MarkdownWithoutRegressionSaysSo) {
  ComparisonReport r = compare_runs(load_benchmark_file(fixture("base.json")),
                                    load_benchmark_file(fixture("missing_new.json")), {});
  std::string md = render_markdown(r);
  EXPECT_EQ(md.rfind("### Benchmark comparison: no regression", 0), 0u);
  EXPECT_THAT(md, HasSubstr("**Missing from the current run** (1): `attention/128`"));
  EXPECT_THAT(md, HasSubstr("`gelu/3072`"));
  EXPECT_THAT(md, Not(HasSubstr("**REGRESSION**")));
  std::string t = render_table(r);
  EXPECT_THAT(t, HasSubstr("missing from the current run (1):\n  attention/128"));
  EXPECT_THAT(t, HasSubstr("new in the current run (2):"));
}

TEST(Report, JsonCarriesEveryRow) {
  ComparisonReport r = shifted();
  nlohmann::json j = nlohmann::json::parse(report_to_json(r).dump());  // survives a round trip
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_EQ(j["improvements"], 1);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["options"]["metric"], "real_time");
  EXPECT_DOUBLE_EQ(j["options"]["threshold"].get<double>(), 0.10);  // the default
  EXPECT_EQ(j["options"]["correction"], "holm");
  EXPECT_EQ(j["options"]["test"], "unpaired");
  ASSERT_EQ(j["benchmarks"].size(), r.rows.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& jr = j["benchmarks"][i];
    EXPECT_EQ(jr["name"], r.rows[i].name);
    EXPECT_DOUBLE_EQ(jr["change"].get<double>(), r.rows[i].change);
    EXPECT_DOUBLE_EQ(jr["p_value"].get<double>(), r.rows[i].p_value);
    EXPECT_EQ(jr["verdict"], std::string(verdict_name(r.rows[i].verdict)));
  }
  EXPECT_EQ(j["calibration_benchmarks"].size(), 1u);
  EXPECT_FALSE(j["calibration"]["applied"].get<bool>());  // --normalize was not given
  EXPECT_NEAR(j["calibration"]["speed_ratio"].get<double>(), 1.0, 0.02);
  EXPECT_DOUBLE_EQ(j["geomean_ratio"].get<double>(), r.geomean_ratio);
}

}  // namespace
}  // namespace hybrid::bench
