// Ranking and reports: the best trial per metric direction (latency: the
// fastest), failures after successes, the memory-model error summary.
#include "autotune/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "profiler/tables/sweep_leaderboard.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialRow;
using profiler::TrialStatus;
using ::testing::HasSubstr;

TrialRow trial(const std::string& key, TrialStatus s, double ms, double samples) {
  TrialRow t;
  t.key = key;
  t.status = s;
  if (s == TrialStatus::ok) {
    t.latency_ms = ms;
    t.samples_per_s = samples;
  }
  return t;
}

std::vector<TrialRow> with_metric(Metric m, std::vector<TrialRow> v) {
  for (auto& t : v)
    if (t.status == TrialStatus::ok)
      t.metric = m == Metric::latency ? *t.latency_ms : *t.samples_per_s;
  return v;
}

const std::vector<TrialRow> kTrials = {
    trial("slow-big", TrialStatus::ok, 80, 200),  // best throughput
    trial("crashed", TrialStatus::crash, 0, 0),
    trial("fast-small", TrialStatus::ok, 10, 100),  // best latency
    trial("middle", TrialStatus::ok, 30, 133),
};

TEST(Report, LatencyPicksTheFastestThroughputTheLargest) {
  const auto lat = with_metric(Metric::latency, kTrials);
  EXPECT_EQ(best_trial(Metric::latency, lat)->key, "fast-small");
  const auto thr = with_metric(Metric::throughput, kTrials);
  EXPECT_EQ(best_trial(Metric::throughput, thr)->key, "slow-big");
  std::vector<std::string> order;
  for (const auto& t : ranked(Metric::latency, lat)) order.push_back(t.key);
  EXPECT_EQ(order, (std::vector<std::string>{"fast-small", "middle", "slow-big", "crashed"}));
  EXPECT_FALSE(best_trial(Metric::latency, {trial("x", TrialStatus::oom, 0, 0)}));
}

// The same ranking as the viewer's leaderboard (profiler/tables): a trial whose
// metric is NaN is never best, and ties keep the store's order.
TEST(Report, RankingMatchesTheViewersLeaderboard) {
  auto lat = with_metric(Metric::latency, kTrials);
  lat[3].metric = std::nan("");
  lat.push_back(trial("tie", TrialStatus::ok, 10, 100));
  lat.back().metric = 10;
  std::vector<std::string> order;
  for (const auto& t : ranked(Metric::latency, lat)) order.push_back(t.key);
  EXPECT_EQ(order,
            (std::vector<std::string>{"fast-small", "tie", "slow-big", "crashed", "middle"}));
  profiler::SweepInfo sweep;
  sweep.metric = std::string(metric_column(Metric::latency));
  const auto board = profiler::build_sweep_leaderboard(sweep, lat, {});
  ASSERT_EQ(board.ranking.size(), 3u);
  EXPECT_EQ(board.rows[size_t(board.best)].trial.key, best_trial(Metric::latency, lat)->key);
  for (size_t i = 0; i < board.ranking.size(); ++i)
    EXPECT_EQ(board.rows[size_t(board.ranking[i])].trial.key, order[i]);
}

TEST(Report, LeaderboardHasUnitsAndReasons) {
  auto lat = with_metric(Metric::latency, kTrials);
  lat[1].reason = "exit status 139: a process died of SIGSEGV";
  lat[0].peak_mem_bytes = 100 << 20;
  lat[0].predicted_mem_bytes = 105 << 20;
  const std::string s = leaderboard(Metric::latency, lat);
  EXPECT_THAT(s, HasSubstr("10.0 ms"));
  EXPECT_THAT(s, HasSubstr("100.00 MiB"));
  EXPECT_THAT(s, HasSubstr("+5.0 %"));
  EXPECT_THAT(s, HasSubstr("SIGSEGV"));
  EXPECT_LT(s.find("fast-small"), s.find("slow-big"));
}

TEST(Report, MemoryCheckIsTheRelativeErrorOfOkTrials) {
  std::vector<TrialRow> v = {trial("a", TrialStatus::ok, 1, 1), trial("b", TrialStatus::ok, 1, 1),
                             trial("c", TrialStatus::oom, 0, 0)};
  v[0].peak_mem_bytes = 1000, v[0].predicted_mem_bytes = 1020;  // +2 %
  v[1].peak_mem_bytes = 1000, v[1].predicted_mem_bytes = 940;   // −6 %
  v[2].peak_mem_bytes = 10, v[2].predicted_mem_bytes = 1000;    // not ok: ignored
  const MemoryCheck c = memory_check(v);
  EXPECT_EQ(c.trials, 2u);
  EXPECT_NEAR(c.mean_abs_error, 0.04, 1e-12);
  EXPECT_NEAR(c.worst_error, -0.06, 1e-12);
  EXPECT_EQ(c.worst_key, "b");
  EXPECT_THAT(format_memory_check(c), HasSubstr("-6.0 %"));
}

TEST(Report, ProgressLineShowsCountBestAndEta) {
  auto v = with_metric(Metric::throughput, kTrials);
  v[0].wall_s = 2.5;
  ProgressInfo p;
  p.done = 3;
  p.planned = 8;
  p.trial = &v[0];
  p.best = &v[0];
  p.eta_s = 75;
  const std::string s = progress_line(Metric::throughput, p);
  EXPECT_THAT(s, HasSubstr("[  3/8]"));
  EXPECT_THAT(s, HasSubstr("200.0 samples/s"));
  EXPECT_THAT(s, HasSubstr("best 200.0 samples/s [slow-big]"));
  EXPECT_THAT(s, HasSubstr("ETA 1m15s"));
}

}  // namespace
}  // namespace hybrid::autotune
