// Noise in the tuner: a noisy trial detected from scripted step-time series
// (deterministic, fed to the classifier and to real hybrid-tune sweeps through a
// launcher that writes them as hybrid-train's result), the tie rule on
// constructed trials, the confirmation run's interleaving and decision, and a
// sweep whose tied winners are confirmed, the artificially slowed one losing.
#include "autotune/noise.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "autotune/tie_break.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::StepSpread;
using profiler::TrialRow;
using profiler::TrialStatus;
using ::testing::HasSubstr;

// 13 steps around `ms`, spread +-`jitter` in a fixed pattern.
std::vector<double> steady(double ms, double jitter) {
  std::vector<double> v;
  for (int i = 0; i < 13; ++i) v.push_back(ms + jitter * double((i * 7) % 5 - 2) / 2);
  return v;
}

TEST(Noise, SteadyStepsAreNotNoisyAndAStrayStepDoesNotMakeThemSo) {
  auto v = steady(4.4, 0.1);  // +-2.3 %
  EXPECT_FALSE(is_noisy(spread_of(v), 0.10));
  v[6] = 25.0;  // one step preempted for 20 ms
  const StepSpread s = spread_of(v);
  EXPECT_FALSE(is_noisy(s, 0.10)) << describe_spread(s);
  EXPECT_GT(s.cv, 0.5);  // the plain CV would have called it noisy
}

TEST(Noise, StepsAlternatingBetweenTwoSpeedsAreNoisy) {
  // Preempted every other step by one 4 ms scheduler tick (what a loaded 2-core machine does).
  std::vector<double> v;
  for (int i = 0; i < 13; ++i) v.push_back(i % 2 ? 8.6 : 4.4);
  const StepSpread s = spread_of(v);
  EXPECT_TRUE(is_noisy(s, 0.10)) << describe_spread(s);
  // A warm-up that lasts into the window: 6 slow steps, then 7 fast ones.
  std::vector<double> warm(6, 6.1);
  for (int i = 0; i < 7; ++i) warm.push_back(4.3);
  EXPECT_TRUE(is_noisy(spread_of(warm), 0.10)) << describe_spread(spread_of(warm));
  // The threshold is the robust CV: IQR / (1.349 median).
  EXPECT_NEAR(robust_cv(s), (s.q3_ms - s.q1_ms) / (1.349 * s.median_ms), 1e-12);
  EXPECT_FALSE(is_noisy(s, robust_cv(s)));
  EXPECT_TRUE(is_noisy(s, robust_cv(s) * 0.99));
}

TrialRow trial(const std::string& key, const std::vector<double>& steps, Metric m) {
  TrialRow t;
  t.key = key;
  t.status = TrialStatus::ok;
  t.spread = spread_of(steps);
  t.latency_ms = t.spread->median_ms;
  t.samples_per_s = 1000.0 / *t.latency_ms;  // one sample per step
  t.metric = m == Metric::latency ? *t.latency_ms : *t.samples_per_s;
  return t;
}

TEST(Noise, TrialsWhoseIntervalsOverlapTheBestsAreTied) {
  for (Metric m : {Metric::latency, Metric::throughput}) {
    SCOPED_TRACE(std::string(metric_name(m)));
    // a: 10.0 ms [9.8, 10.2]; b: 10.3 ms [10.1, 10.5]; c: 12.0 ms [11.8, 12.2].
    const std::vector<TrialRow> trials = {trial("c", steady(12.0, 0.4), m),
                                          trial("b", steady(10.3, 0.4), m),
                                          trial("a", steady(10.0, 0.4), m)};
    const auto iv_a = *metric_interval(m, trials[2]);
    const auto iv_b = *metric_interval(m, trials[1]);
    EXPECT_TRUE(overlap(iv_a, iv_b));
    EXPECT_FALSE(overlap(iv_a, *metric_interval(m, trials[0])));
    EXPECT_LE(iv_a.lo, *trials[2].metric);
    EXPECT_GE(iv_a.hi, *trials[2].metric);
    if (m == Metric::throughput) {  // the rate's bounds are the times' bounds, swapped
      EXPECT_DOUBLE_EQ(iv_a.lo, 1000.0 / trials[2].spread->ci_high_ms);
      EXPECT_DOUBLE_EQ(iv_a.hi, 1000.0 / trials[2].spread->ci_low_ms);
    }
    EXPECT_EQ(tied_with_best(m, trials, 3), (std::vector<size_t>{2, 1}));
    EXPECT_EQ(tied_with_best(m, trials, 1), (std::vector<size_t>{2}));
    // b made steadier and slower: its interval clears a's, no tie.
    auto apart = trials;
    apart[1] = trial("b", steady(10.6, 0.1), m);
    EXPECT_EQ(tied_with_best(m, apart, 3), (std::vector<size_t>{2}));
    // Without a spread (a v4 store's trials) nothing is called a tie.
    auto old = trials;
    for (auto& t : old) t.spread.reset();
    EXPECT_EQ(tied_with_best(m, old, 3).size(), 1u);
  }
}

TEST(Noise, ConfirmationPicksTheFasterCandidateAndSaysWhenItCannot) {
  const Metric m = Metric::latency;
  const std::vector<TrialRow> tied = {trial("a", steady(10.0, 0.4), m),
                                      trial("b", steady(10.2, 0.4), m)};
  // b artificially slowed by 8 % in the confirmation run: a wins, decided.
  std::vector<double> a = steady(10.0, 0.2), b = steady(10.8, 0.2);
  auto r = decide_confirmation(m, tied, {a, b}, 1);
  EXPECT_EQ(r.winner, 0u);
  EXPECT_TRUE(r.decided) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("a wins"));
  // a slowed instead: b wins although a led the first pass.
  r = decide_confirmation(m, tied, {b, a}, 1);
  EXPECT_EQ(r.winner, 1u);
  EXPECT_TRUE(r.decided);
  // The same speed: still a tie, the better median is written and the output says so.
  r = decide_confirmation(m, tied, {steady(10.0, 0.4), steady(10.05, 0.4)}, 1);
  EXPECT_FALSE(r.decided);
  EXPECT_EQ(r.winner, 0u);
  EXPECT_THAT(r.summary, HasSubstr("still a tie"));
  // A candidate whose confirmation trials all failed cannot win.
  r = decide_confirmation(m, tied, {{}, b}, 1);
  EXPECT_EQ(r.winner, 1u);
  // Throughput: higher is better, the same steps decide the same way.
  const std::vector<TrialRow> rates = {trial("a", steady(10.0, 0.4), Metric::throughput),
                                       trial("b", steady(10.2, 0.4), Metric::throughput)};
  r = decide_confirmation(Metric::throughput, rates, {a, b}, 1);
  EXPECT_EQ(r.winner, 0u);
  EXPECT_TRUE(r.decided);
  EXPECT_NEAR(r.medians[0], 1000.0 / 10.0, 1e-9);
}

TEST(Noise, ConfirmationRoundsInterleaveInARotatingOrder) {
  const Metric m = Metric::latency;
  const std::vector<TrialRow> tied = {trial("a", steady(10, 0.4), m),
                                      trial("b", steady(10, 0.4), m),
                                      trial("c", steady(10, 0.4), m)};
  std::vector<std::pair<size_t, int>> calls;
  const auto r = run_confirmation(m, tied, 3, [&](size_t c, int round) {
    calls.emplace_back(c, round);
    return steady(10.0 + double(c), 0.1);  // a fastest
  });
  ASSERT_TRUE(r);
  const std::vector<std::pair<size_t, int>> want = {{0, 0}, {1, 0}, {2, 0}, {1, 1}, {2, 1},
                                                    {0, 1}, {2, 2}, {0, 2}, {1, 2}};
  EXPECT_EQ(calls, want);
  EXPECT_EQ(r->spreads[0].count, 39);  // pooled over the rounds
  EXPECT_EQ(r->winner, 0u);
  EXPECT_TRUE(r->decided);
  int asked = 0;
  EXPECT_FALSE(run_confirmation(
      m, tied, 3, [](size_t, int) { return steady(10, 0.1); }, [&] { return ++asked > 2; }));
}

// A tuner killed after storing its confirmation (while writing best.json) resumes
// with that decision: found for the same tied keys in the same order and the same
// rounds, the latest when there are several; anything else is a new confirmation.
TEST(Noise, StoredConfirmationIsFoundOnlyForTheSameCandidatesAndRounds) {
  const Metric m = Metric::latency;
  const std::vector<TrialRow> tied = {trial("a", steady(10, 0.4), m),
                                      trial("b", steady(10, 0.4), m)};
  const auto decided = decide_confirmation(m, tied, {steady(10.0, 0.1), steady(11.0, 0.1)}, 2);
  const profiler::TieBreak ab = tie_break_row(m, 7, tied, decided);
  EXPECT_FALSE(stored_confirmation({}, tied, 2));
  ASSERT_TRUE(stored_confirmation({ab}, tied, 2));
  EXPECT_EQ(*stored_confirmation({ab}, tied, 2), ab);
  EXPECT_FALSE(stored_confirmation({ab}, tied, 3)) << "other rounds";
  EXPECT_FALSE(stored_confirmation({ab}, {tied[1], tied[0]}, 2)) << "other order";
  EXPECT_FALSE(stored_confirmation({ab}, {tied[0]}, 2)) << "fewer candidates";
  EXPECT_FALSE(stored_confirmation({ab}, {tied[0], trial("c", steady(10, 0.4), m)}, 2));
  profiler::TieBreak later = ab;
  later.id = 9;
  later.winner_key = "b";
  EXPECT_EQ(stored_confirmation({ab, later}, tied, 2)->id, 9) << "the latest record";
  profiler::TieBreak damaged = ab;
  damaged.candidates_json = "not json";
  EXPECT_FALSE(stored_confirmation({damaged}, tied, 2));
}

// A real sweep through hybrid-tune whose trials are the series launcher's scripted results.
struct ScriptedSweep {
  test::TempDir dir;
  test::CommandResult run(const std::string& spec, const std::string& extra = "") {
    std::ofstream(dir / "spec.txt") << spec;
    test::write_json(dir / "cfg.json", test::tiny_config());
    test::write_json(dir / "space.json", json::parse(R"({"mbs": [1, 2], "stage": [0]})"));
    const std::string launcher =
        fmt::format("bash {}/series_launcher.sh {} {{key}} {{dir}} {{cmd}}", test::data_dir(),
                    dir / "spec.txt");
    return test::run_command(fmt::format(
        "{} --config {} --space {} --metric latency --strategy grid --early-stop 0 --steps 13 "
        "--start-step 1 --no-probe --db {} --out {} --launcher '{}' {}",
        test::tune_bin(), dir / "cfg.json", dir / "space.json", dir / "tune.db", dir / "best.json",
        launcher, extra));
  }
  std::map<std::string, TrialRow> trials() {
    profiler::RunStore store(dir / "tune.db", profiler::OpenMode::read_only);
    std::map<std::string, TrialRow> m;
    for (auto& t : store.trials(store.sweeps().at(0).id)) m[t.key] = t;
    return m;
  }
  std::vector<profiler::TieBreak> tie_breaks() {
    profiler::RunStore store(dir / "tune.db", profiler::OpenMode::read_only);
    return store.tie_breaks(store.sweeps().at(0).id);
  }
};

std::string series(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += fmt::format(" {}", x);
  return s;
}

TEST(Noise, SweepRemeasuresANoisyTrialThenMarksItAndStoresTheSpread) {
  ScriptedSweep sw;
  std::vector<double> alternating;
  for (int i = 0; i < 13; ++i) alternating.push_back(i % 2 ? 9.0 : 4.5);
  const std::string spec = "first mbs=1,gas=1,stage=0" + series(alternating) +
                           "\nfirst mbs=2,gas=1,stage=0" + series(alternating) +
                           "\nremeasure mbs=2,gas=1,stage=0" + series(steady(20.0, 0.2)) + "\n";
  const auto r = sw.run(spec, "--remeasure 2 --confirm-rounds 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto t = sw.trials();
  const TrialRow& noisy = t.at("mbs=1,gas=1,stage=0");
  EXPECT_EQ(noisy.status, TrialStatus::ok);
  EXPECT_TRUE(noisy.noisy);
  EXPECT_EQ(noisy.attempts, 3);  // 1 + --remeasure 2
  EXPECT_THAT(noisy.reason, HasSubstr("noisy after 3 measurement(s)"));
  ASSERT_TRUE(noisy.spread);
  EXPECT_EQ(noisy.spread->count, 13);
  EXPECT_DOUBLE_EQ(noisy.spread->median_ms, 4.5);  // 7 of 13 steps at 4.5 ms, 6 at 9.0 ms
  EXPECT_DOUBLE_EQ(noisy.spread->q3_ms, 9.0);
  const TrialRow& calmed = t.at("mbs=2,gas=1,stage=0");
  EXPECT_FALSE(calmed.noisy);
  EXPECT_EQ(calmed.attempts, 2);  // steady on its second measurement
  EXPECT_NEAR(*calmed.latency_ms, 20.0, 0.2);
  // The leaderboard prints the interval and marks the noisy trial.
  EXPECT_THAT(r.output, HasSubstr("95 % interval"));
  EXPECT_THAT(r.output, HasSubstr("~"));
}

TEST(Noise, SweepConfirmsTiedWinnersAndTheSlowedOneLoses) {
  for (const bool slow_first : {true, false}) {
    SCOPED_TRACE(slow_first ? "the first-pass leader slowed" : "the runner-up slowed");
    ScriptedSweep sw;
    // First pass: mbs=1 10.0 ms, mbs=2 10.2 ms, intervals overlapping: a tie.
    const std::string a = "mbs=1,gas=1,stage=0", b = "mbs=2,gas=1,stage=0";
    const auto fast = steady(10.0, 0.2), slow = steady(10.9, 0.2);  // 9 % slower
    const std::string spec = "first " + a + series(steady(10.0, 0.8)) + "\nfirst " + b +
                             series(steady(10.2, 0.8)) + "\nconfirm " + a +
                             series(slow_first ? slow : fast) + "\nconfirm " + b +
                             series(slow_first ? fast : slow) + "\n";
    const auto r = sw.run(spec, "--confirm-rounds 3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string winner = slow_first ? b : a;
    EXPECT_THAT(r.output, HasSubstr("tie within noise: 2 candidates, confirming in 3"));
    EXPECT_THAT(r.output, HasSubstr(winner + " wins"));
    EXPECT_THAT(r.output, HasSubstr("best: " + winner));
    EXPECT_THAT(r.output, HasSubstr("won the confirmation run"));
    const auto tbs = sw.tie_breaks();
    ASSERT_EQ(tbs.size(), 1u);
    EXPECT_EQ(tbs[0].winner_key, winner);
    EXPECT_TRUE(tbs[0].decided);
    EXPECT_EQ(tbs[0].rounds, 3);
    const json cands = json::parse(tbs[0].candidates_json);
    ASSERT_EQ(cands.size(), 2u);
    EXPECT_EQ(cands[0]["confirmed_steps"], 39);  // 3 rounds of 13 steps
    // The written config is the winner's.
    const json best = test::read_json(sw.dir / "best.json");
    EXPECT_EQ(best["train_micro_batch_size_per_gpu"], winner == a ? 1 : 2);
  }
}

// Load that changed between two trials is invisible to their intervals: a trial
// measured in a quiet moment looks steady and clearly best. --confirm-best runs
// the best against the runner-up interleaved anyway, and the interleaved rounds
// see the truth.
TEST(Noise, ConfirmBestCatchesALeadThatLoadBetweenTrialsMade) {
  const std::string a = "mbs=1,gas=1,stage=0", b = "mbs=2,gas=1,stage=0";
  const std::string spec = "first " + a + series(steady(10.0, 0.2)) + "\nfirst " + b +
                           series(steady(12.0, 0.2)) + "\nconfirm " + a +
                           series(steady(13.0, 0.2)) + "\nconfirm " + b +
                           series(steady(12.0, 0.2)) + "\n";
  {
    ScriptedSweep sw;  // default: apart intervals are no tie, nothing is confirmed
    const auto r = sw.run(spec);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("best: " + a));
    EXPECT_TRUE(sw.tie_breaks().empty());
  }
  ScriptedSweep sw;
  const auto r = sw.run(spec, "--confirm-best --confirm-rounds 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("best against the runner-up (--confirm-best): 2 candidates"));
  EXPECT_THAT(r.output, HasSubstr("best confirmed against the runner-up; first pass"));
  EXPECT_THAT(r.output, HasSubstr("best: " + b));
  const auto tbs = sw.tie_breaks();
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_EQ(tbs[0].winner_key, b);
  EXPECT_TRUE(tbs[0].decided);
  EXPECT_EQ(tbs[0].rounds, 2);
}

}  // namespace
}  // namespace hybrid::autotune
