// The text reports contain the numbers they were given: figures are parsed back
// out of the text and compared with values worked out independently here (by
// hand in sample_profile.h), to the precision printed (±half the last digit).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "profiler/report_comm.h"
#include "profiler/report_flops.h"
#include "profiler/report_format.h"
#include "profiler/report_memory.h"
#include "profiler/report_steps.h"
#include "sample_profile.h"

namespace hybrid::profiler {
namespace {

// The first line containing `key`.
std::string line_with(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(key) != std::string::npos) return line;
  ADD_FAILURE() << "no line with '" << key << "' in:\n" << text;
  return {};
}

// Every decimal number in `s` after `after`, in order.
std::vector<double> numbers(const std::string& s, const std::string& after = "") {
  const std::string tail = s.substr(after.empty() ? 0 : s.find(after) + after.size());
  static const std::regex num(R"([-+]?\d+(\.\d+)?)");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(tail.begin(), tail.end(), num); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod(it->str()));
  return out;
}

// The text between the section header containing `title` and the next header.
std::string section_of(const std::string& text, const std::string& title) {
  const auto start = text.find(title);
  if (start == std::string::npos) return {};
  const auto end = text.find("\n---", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The reports' units are base's (tests/base/units_and_env_test.cpp); the table is theirs.
TEST(ReportFormat, Tables) {
  using namespace report;
  TextTable t({"name", "value"});
  t.add_row({"a", "1"});
  t.add_row({"longer", "12345"});
  EXPECT_EQ(t.render(), "name    value\n-------------\na           1\nlonger  12345\n");
  EXPECT_THROW(t.add_row({"only one"}), std::invalid_argument);
}

TEST(FlopsReport, SummaryCoversEveryRankWithMinMaxMean) {
  const RunProfile p = test::sample_profile();
  const std::string text = flops_report(p);
  EXPECT_NE(line_with(text, "profiled step:").find("3"), std::string::npos);  // the last one
  EXPECT_NE(line_with(text, "ranks in profile:").find("2 of 2"), std::string::npos);
  EXPECT_NE(line_with(text, "params:").find("623.87 K"), std::string::npos);
  EXPECT_NE(line_with(text, "micro batch size per rank:").find("4"), std::string::npos);

  // fwd: rank 0 21.5 ms, rank 1 26.875 ms → mean 24.1875 ms.
  auto fwd = numbers(line_with(text, "fwd latency per rank"), ":");
  ASSERT_EQ(fwd.size(), 3u);
  EXPECT_NEAR(fwd[0], 24.1875, 0.005);
  EXPECT_NEAR(fwd[1], 21.5, 0.005);
  EXPECT_NEAR(fwd[2], 26.875, 0.005);
  auto bwd = numbers(line_with(text, "bwd latency per rank"), ":");
  ASSERT_EQ(bwd.size(), 3u);
  EXPECT_NEAR(bwd[0], 2 * 24.1875, 0.05);
  auto both = numbers(line_with(text, "fwd+bwd latency per rank"), ":");
  EXPECT_NEAR(both.at(0), 3 * 24.1875, 0.05);

  EXPECT_NE(line_with(text, "step latency:").find("95.50 ms"), std::string::npos);
  EXPECT_NE(line_with(text, "fwd FLOPs per rank:").find("24.00 GFLOP"), std::string::npos);
  EXPECT_NE(line_with(text, "bwd FLOPs per rank:").find("48.00 GFLOP"), std::string::npos);
  EXPECT_NE(line_with(text, "bwd / fwd FLOPs:").find("2.00"), std::string::npos);
  // Both ranks: 2 × (24.001 + 48.002) GFLOP.
  EXPECT_NE(line_with(text, "FLOPs per step (all ranks):").find("144.01 GFLOP"), std::string::npos);
  // fwd FLOP/s: 24.001e9 / 21.5 ms = 1.116 TFLOP/s on rank 0, / 26.875 ms = 893.1 GFLOP/s on
  // rank 1.
  const std::string rate = line_with(text, "fwd FLOP/s per rank");
  EXPECT_NE(rate.find("[893.06 GFLOP/s, 1.12 TFLOP/s]"), std::string::npos) << rate;
  EXPECT_NE(line_with(text, "achieved FLOP/s of the step").find("1.50 TFLOP/s"), std::string::npos);

  RunProfile three = p;
  three.run.world_size = 3;
  EXPECT_NE(line_with(flops_report(three), "ranks in profile:").find("2 of 3 (missing: 2)"),
            std::string::npos);
}

TEST(FlopsReport, ModuleTreeForwardAndBackwardWithContainerSums) {
  const std::string text = flops_report(test::sample_profile());
  const std::string fwd = section_of(text, "forward, per module");
  const std::string bwd = section_of(text, "backward, per module");
  ASSERT_FALSE(fwd.empty());
  ASSERT_FALSE(bwd.empty());
  // h.0 has no row of its own: attn + mlp = 10 ms on rank 0, 12.5 ms on rank 1.
  const std::string h0 = line_with(fwd, "h.0 ");
  EXPECT_NE(h0.find("11.25 ms [10.00 ms, 12.50 ms]"), std::string::npos) << h0;
  EXPECT_NE(h0.find("49.73 K (7.97%)"), std::string::npos) << h0;  // 49,728 of 623,872 params
  EXPECT_NE(h0.find("46.51%"), std::string::npos) << h0;           // 11.25 / 24.1875 of the forward
  EXPECT_NE(h0.find("12.00 GFLOP"), std::string::npos) << h0;
  EXPECT_NE(line_with(bwd, "h.0 ").find("22.50 ms [20.00 ms, 25.00 ms]"), std::string::npos);
  EXPECT_NE(line_with(bwd, "h.0 ").find("24.00 GFLOP"), std::string::npos);
  // The model row is the whole forward: 100%.
  EXPECT_NE(line_with(fwd, "  model ").find("100.00%"), std::string::npos);
  // Every module appears, children indented under their parent.
  for (const auto& m : test::sample_modules())
    EXPECT_NE(fwd.find(std::string(size_t(2 * m.depth), ' ') + m.name + " "), std::string::npos)
        << m.name;
}

TEST(FlopsReport, DepthLimitAndTopModules) {
  FlopsReportOptions o;
  o.module_depth = 1;
  const std::string shallow = flops_report(test::sample_profile(), o);
  EXPECT_EQ(shallow.find("h.0.attn"), std::string::npos);
  EXPECT_NE(shallow.find("h.0 "), std::string::npos);
  EXPECT_EQ(section_of(shallow, "aggregated profile").find("depth 2"), std::string::npos);

  o.module_depth = -1;
  o.top_modules = 1;
  const std::string agg = section_of(flops_report(test::sample_profile(), o), "aggregated profile");
  // At depth 2 the MLPs (36 ms fwd+bwd on rank 0) outrank the attentions (24 ms).
  const std::string depth2 = agg.substr(agg.find("depth 2"));
  EXPECT_NE(depth2.find("MLP"), std::string::npos) << agg;
  EXPECT_EQ(depth2.find("Attention"), std::string::npos) << agg;
  // Two MLPs, rank mean: fwd (12 + 15) / 2 = 13.5 ms.
  EXPECT_NE(line_with(depth2, "MLP").find("13.50 ms"), std::string::npos) << depth2;
  o.top_modules = 2;
  const std::string agg2 =
      section_of(flops_report(test::sample_profile(), o), "aggregated profile");
  EXPECT_NE(agg2.substr(agg2.find("depth 2")).find("Attention"), std::string::npos);
}

TEST(FlopsReport, DetailedFalseKeepsTheSummaryAndTheAggregatedProfileOnly) {
  FlopsReportOptions o;
  o.detailed = false;
  o.top_modules = 2;
  const std::string brief = flops_report(test::sample_profile(), o);
  o.detailed = true;
  const std::string full = flops_report(test::sample_profile(), o);
  // As DeepSpeed's print_model_profile(detailed=False): no module trees.
  EXPECT_EQ(brief.find("forward, per module"), std::string::npos) << brief;
  EXPECT_EQ(brief.find("backward, per module"), std::string::npos) << brief;
  EXPECT_NE(full.find("forward, per module"), std::string::npos);
  // The rest is the same text: the detailed report starts with the brief one.
  EXPECT_EQ(full.substr(0, brief.size()), brief);
  EXPECT_NE(section_of(brief, "aggregated profile").find("Attention"), std::string::npos) << brief;
}

TEST(FlopsReport, ChoosesTheRequestedStepAndRejectsUnknownOnes) {
  FlopsReportOptions o;
  o.step = 2;
  const std::string text = flops_report(test::sample_profile(), o);
  auto fwd = numbers(line_with(text, "fwd latency per rank"), ":");
  ASSERT_EQ(fwd.size(), 3u);
  EXPECT_NEAR(fwd[0], 7.0, 0.005);  // only wte was profiled at step 2, on rank 0
  EXPECT_NE(line_with(text, "ranks in profile:").find("1 of 2 (missing: 1)"), std::string::npos);
  o.step = 9;
  try {
    flops_report(test::sample_profile(), o);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no layer profile for step 9 (profiled steps: 2, 3)"),
              std::string::npos)
        << e.what();
  }
  RunProfile empty = test::sample_profile();
  empty.layers.clear();
  EXPECT_NE(flops_report(empty).find("has no layer profile"), std::string::npos);
}

TEST(CommReport, ByOpAndSizeAndExposedPerStep) {
  const std::string text = comm_report(test::sample_profile());
  const std::string row = line_with(text, "all_reduce");
  // size, ranks, count/rank, mean latency (12 ms / 20 calls), min, max, total per rank.
  EXPECT_NE(row.find("1.00 MiB"), std::string::npos) << row;
  EXPECT_NE(row.find("10.0"), std::string::npos) << row;
  EXPECT_NE(row.find("0.600 ms"), std::string::npos) << row;
  EXPECT_NE(row.find("0.400 ms"), std::string::npos) << row;
  EXPECT_NE(row.find("0.900 ms"), std::string::npos) << row;
  EXPECT_NE(row.find("6.00 ms"), std::string::npos) << row;
  EXPECT_NE(row.find("1.75 GB/s (1.50 GB/s)"), std::string::npos) << row;  // algbw mean (min)
  EXPECT_NE(row.find("2.75 GB/s (2.50 GB/s)"), std::string::npos) << row;  // busbw
  // Step 3: comm mean 21 ms, exposed mean 6 ms, max 7 ms, hidden 1 − 12/42 = 71.43%.
  const std::string step = line_with(text.substr(text.find("Per step")), "  3  ");
  auto v = numbers(step);
  ASSERT_EQ(v.size(), 7u) << step;
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 2);
  EXPECT_NEAR(v[2], 82.5, 0.005);
  EXPECT_NEAR(v[3], 21.0, 0.005);
  EXPECT_NEAR(v[4], 6.0, 0.005);
  EXPECT_NEAR(v[5], 7.0, 0.005);
  EXPECT_NEAR(v[6], 71.43, 0.005);
  EXPECT_NE(line_with(text, "total comm").find("21.00 ms, exposed 6.00 ms (28.57% of comm)"),
            std::string::npos);

  RunProfile none = test::sample_profile();
  none.comm.clear();
  none.step_ranks.clear();
  EXPECT_NE(comm_report(none).find("no collectives recorded"), std::string::npos);
  EXPECT_EQ(text.find("Offload I/O"), std::string::npos) << "no NVMe offload, no section";
}

// The NVMe offload's swap-file I/O rows (ops nvme_read/nvme_write) get their own
// table: requests, bytes and time per rank, bandwidth = bytes / time.
TEST(CommReport, OffloadIoApartFromTheCollectives) {
  RunProfile p = test::sample_profile();
  // Two ranks: 10 reads of 4 MB in 20 ms and 30 ms; 5 writes of 2 MB in 10 ms on rank 0.
  p.comm.push_back({0, "nvme_read", 4'000'000, 10, 20'000'000, 1'000'000, 3'000'000, 2.0, 2.0});
  p.comm.push_back({1, "nvme_read", 4'000'000, 10, 30'000'000, 2'000'000, 4'000'000, 1.5, 1.5});
  p.comm.push_back({0, "nvme_write", 2'000'000, 5, 10'000'000, 2'000'000, 2'000'000, 1.0, 1.0});
  const std::string text = comm_report(p);
  const std::string by_op =
      text.substr(text.find("By op"), text.find("Offload I/O") - text.find("By op"));
  EXPECT_EQ(by_op.find("nvme_"), std::string::npos) << "not listed as collectives:\n" << by_op;
  const std::string io = text.substr(text.find("Offload I/O"));
  // 10 requests/rank, 40 MB/rank (38.15 MiB), 25 ms/rank, 80 MB / 50 ms = 1.60 GB/s.
  EXPECT_NE(line_with(io, "nvme_read").find("10.0"), std::string::npos);
  EXPECT_NE(line_with(io, "nvme_read").find("38.15 MiB"), std::string::npos) << io;
  EXPECT_NE(line_with(io, "nvme_read").find("25.00 ms"), std::string::npos) << io;
  EXPECT_NE(line_with(io, "nvme_read").find("1.60 GB/s"), std::string::npos) << io;
  EXPECT_NE(line_with(io, "nvme_write").find("1.00 GB/s"), std::string::npos) << io;
}

TEST(StepsReport, EveryStepAndTheSummary) {
  const std::string text = steps_report(test::sample_profile());
  const std::string s1 = line_with(text, "10.1234");
  EXPECT_NE(s1.find("1.000e-04"), std::string::npos) << s1;
  EXPECT_NE(s1.find("65536"), std::string::npos) << s1;
  EXPECT_NE(s1.find("100.0 ms"), std::string::npos) << s1;
  EXPECT_NE(s1.find("8.19 K"), std::string::npos) << s1;
  EXPECT_NE(s1.find("1.20 TFLOP/s"), std::string::npos) << s1;
  EXPECT_NE(line_with(text, "nan").find("yes"), std::string::npos);  // the skipped step
  // Median of 100, 80, 95.5 ms; mean tokens/s (8192 + 0 + 8500) / 3 = 5564.
  const std::string summary = line_with(text, "median step");
  EXPECT_NE(summary.find("95.50 ms"), std::string::npos) << summary;
  EXPECT_NE(summary.find("5.56 K tokens/s"), std::string::npos) << summary;
  EXPECT_NE(summary.find("900.00 GFLOP/s"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1 skipped"), std::string::npos) << summary;
}

// A pipeline run's bubble per step: the mean over ranks, and its share of the
// step; a run without bubbles has no such column.
TEST(StepsReport, PipelineBubblePerStepIsTheRankMeanAndItsShare) {
  RunProfile p = test::sample_profile();
  EXPECT_EQ(steps_report(p).find("bubble"), std::string::npos);
  p.step_ranks.clear();
  // Steps 1, 2, 3 take 100, 80, 95.5 ms (sample_profile).
  for (auto [step, rank, bubble] : {std::tuple{1, 0, 10.0},
                                    {1, 1, 30.0},
                                    {2, 0, 8.0},
                                    {2, 1, 8.0},
                                    {3, 0, 0.0},
                                    {3, 1, 19.1}}) {
    StepRankRow r;
    r.step = step;
    r.rank = rank;
    r.bubble_ms = bubble;
    p.step_ranks.push_back(r);
  }
  const std::string text = steps_report(p);
  EXPECT_NE(line_with(text, "10.1234").find("20.00 ms (20.00%)"), std::string::npos)
      << line_with(text, "10.1234");
  // Shares 20 %, 10 %, 10 % (9.55 of 95.5): the median is 10 %.
  EXPECT_NE(line_with(text, "median step").find("median pipeline bubble 10.00% of the step"),
            std::string::npos)
      << line_with(text, "median step");
}

TEST(StepsReport, WallClockTimersInDeepSpeedsOrderWithMeanMinMaxAndShare) {
  RunProfile p = test::sample_profile();
  EXPECT_EQ(steps_report(p).find("wall-clock breakdown"), std::string::npos);  // none recorded
  p.step_timers = {{1, 0, "step", 5.0},     {1, 0, "backward", 40.0},
                   {1, 0, "forward", 10.0}, {1, 1, "forward", 20.0},
                   {3, 0, "forward", 30.0}, {3, 1, "optimizer_step", 2.0}};
  const std::string text = section_of(steps_report(p), "wall-clock breakdown");
  ASSERT_FALSE(text.empty());
  // forward over (step, rank): mean 20, min 10, max 30; 20 of the mean step
  // (100 + 80 + 95.5) / 3 ms = 21.78 %.
  const std::string fwd = line_with(text, "forward");
  EXPECT_NE(fwd.find("20.00 ms"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("10.00 ms"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("30.00 ms"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("21.78%"), std::string::npos) << fwd;
  // DeepSpeed's order, not the alphabet.
  const size_t f = text.find("forward"), b = text.find("backward"), st = text.find("step  "),
               o = text.find("optimizer_step");
  EXPECT_LT(f, b);
  EXPECT_LT(b, st);
  EXPECT_LT(st, o);
}

TEST(MemoryReport, PerRankCategoriesWithPredictionRatio) {
  const std::string text = memory_report(test::sample_profile());
  const std::string rank0 =
      text.substr(text.find("rank 0:"), text.find("rank 1:") - text.find("rank 0:"));
  const std::string act = line_with(rank0, "activations");
  EXPECT_NE(act.find("2.00 GiB"), std::string::npos) << act;
  EXPECT_NE(act.find("1.60 GiB"), std::string::npos) << act;
  EXPECT_NE(act.find("1.25"), std::string::npos) << act;
  EXPECT_NE(line_with(rank0, "params").find("1.00"), std::string::npos);
  // Sums: peak 3.5 GiB against 3.1 GiB predicted → 1.13.
  const std::string total = line_with(rank0, "total (sum)");
  EXPECT_NE(total.find("3.50 GiB"), std::string::npos) << total;
  EXPECT_NE(total.find("3.10 GiB"), std::string::npos) << total;
  EXPECT_NE(total.find("1.13"), std::string::npos) << total;
  const std::string grads = line_with(text.substr(text.find("rank 1:")), "grads");
  EXPECT_NE(grads.find("4.00 KiB"), std::string::npos) << grads;
  EXPECT_NE(grads.find(" - "), std::string::npos) << grads;  // no prediction
  EXPECT_EQ(text.find("offload"), std::string::npos) << "no offload, no host or NVMe tables";
}

// Offload rows ("host.<category>", "nvme.<category>") form their own tables per
// rank, with their own totals; the device table keeps only device memory.
TEST(MemoryReport, HostMemoryAndNvmeFilesOfTheOffloadApart) {
  RunProfile p = test::sample_profile();
  p.memory.push_back({0, "host.master", 4096, 4096, 4096});
  p.memory.push_back({0, "host.optimizer", 8192, 8192, 8192});
  p.memory.push_back({0, "nvme.params", 1 << 20, 1 << 20, 1 << 20});
  const std::string text = memory_report(p);
  const auto dev = text.find("rank 0:"), host = text.find("rank 0, host memory (offload):"),
             nvme = text.find("rank 0, NVMe swap files (offload):");
  ASSERT_NE(host, std::string::npos) << text;
  ASSERT_NE(nvme, std::string::npos) << text;
  EXPECT_LT(dev, host);
  EXPECT_LT(host, nvme);
  const std::string device_part = text.substr(dev, host - dev);
  EXPECT_NE(line_with(device_part, "total (sum)").find("3.50 GiB"), std::string::npos)
      << "device totals unchanged by the offload rows";
  const std::string host_part = text.substr(host, nvme - host);
  EXPECT_NE(line_with(host_part, "master").find("4.00 KiB"), std::string::npos) << host_part;
  EXPECT_NE(line_with(host_part, "total (sum)").find("12.00 KiB"), std::string::npos) << host_part;
  EXPECT_NE(line_with(host_part, "total (sum)").find("1.00"), std::string::npos) << host_part;
  const std::string nvme_part = text.substr(nvme, text.find("rank 1:") - nvme);
  EXPECT_NE(line_with(nvme_part, "params").find("1.00 MiB"), std::string::npos) << nvme_part;
}

}  // namespace
}  // namespace hybrid::profiler
