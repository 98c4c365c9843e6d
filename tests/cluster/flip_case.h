// Shared by the flip tests across test hosts (layout_flip_across_hosts_test,
// bucket_flip_across_hosts_test): one case probes the hosts' links, sweeps two
// candidates with hybrid-tune, and sets what it measured beside what the cost
// model predicts from that probe (prior weights, no trial fitted, as
// `hybrid-tune --dry-run` predicts). What a case asserts holds whatever the
// machine's load: the sweep's pick follows the numbers it recorded, and the
// prediction follows the probe's recorded rates. Whether the measured winner
// is the predicted one is a measurement, printed with its figures, not a test
// verdict: on 2 cores shared with other tests the load decides it (issue 26;
// the figures of quiet runs are in docs/cluster.md).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "autotune/cost_model.h"
#include "autotune/metric.h"
#include "autotune/noise.h"
#include "autotune/sweep.h"
#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_cluster.h"

namespace hybrid::autotune {

using nlohmann::json;

struct FlipCase {
  std::map<std::string, double> measured;     // samples/s per candidate key
  std::map<std::string, double> predicted;    // samples/s per candidate key (prior cost model)
  std::map<std::string, StepFeatures> terms;  // the prediction's terms per candidate key
  std::string measured_best, predicted_best;
  std::vector<std::string> within_noise;  // the measured best and those tied with it
  std::string output;
};

inline std::string best_of(const std::map<std::string, double>& m) {
  return std::max_element(m.begin(), m.end(), [](auto& a, auto& b) { return a.second < b.second; })
      ->first;
}

// The cost model's throughput per candidate from the probe in `db`, as
// `hybrid-tune --dry-run` predicts it (prior weights, no trial fitted).
inline std::map<std::string, double> predict(const TuneOptions& o,
                                             std::map<std::string, StepFeatures>& terms) {
  const SweepPlan plan = plan_sweep(o);
  profiler::RunStore store(o.db, profiler::OpenMode::read_only);
  std::string note;
  const ClusterRates rates = cluster_rates_for(plan, &store, false, note);
  EXPECT_EQ(rates.link, "inter_host") << note;
  std::map<std::string, double> out;
  const CostModel prior;
  for (const auto& c : plan.runnable) {
    const auto f = step_features(c.parsed, o.nprocs, rates);
    terms[c.key] = f;
    out[c.key] = metric_from_step_time(Metric::throughput, prior.predict_s(f), f.samples_per_step,
                                       f.tokens_per_step, f.flops_per_step);
  }
  return out;
}

inline FlipCase run_flip_case(const hybrid::test::TestCluster& cluster, const test::TempDir& dir,
                              const std::string& name, const json& config, const json& space) {
  TuneOptions o;
  o.config = dir / (name + ".json");
  o.space = dir / (name + ".space.json");
  o.hostfile = dir / (name + ".hosts");
  o.db = dir / (name + ".db");
  o.out = dir / (name + ".best.json");
  o.nprocs = 2;
  o.metric = "throughput";
  o.train_bin = test::train_bin();
  std::ofstream(o.hostfile) << "hyb-node1 slots=1\nhyb-node2 slots=1\n";
  test::write_json(o.config, config);
  test::write_json(o.space, space);
  FlipCase c;
  const auto probe = test::run_command(
      fmt::format("env {} {} probe --hostfile {} --nprocs 2 --max-message {} --db {}",
                  cluster.env(), test::tune_bin(), o.hostfile, uint64_t(16) << 20, o.db));
  EXPECT_EQ(probe.exit_code, 0) << probe.output;
  // Each candidate measured once: a noisy trial re-measured (2 more runs) or a
  // tie confirmed (3 more rounds of both) reruns trials on the shared cores for
  // figures that decide nothing here (the pick follows whatever the sweep
  // recorded, the prediction follows the probe).
  const auto sweep = test::run_command(fmt::format(
      "env {} {} --config {} --space {} --nprocs 2 --hostfile {} --metric throughput --steps 10 "
      "--start-step 3 --early-stop 0 --no-probe --remeasure 0 --confirm-rounds 0 --db {} --out {}",
      cluster.env(), test::tune_bin(), o.config, o.space, o.hostfile, o.db, o.out));
  EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
  c.output = probe.output + sweep.output;

  profiler::RunStore store(o.db, profiler::OpenMode::read_only);
  const auto sweeps = store.sweeps();
  if (sweeps.size() != 1u) return c;
  const auto trials = store.trials(sweeps[0].id);
  for (const auto& t : trials) {
    EXPECT_EQ(t.status, profiler::TrialStatus::ok) << t.key << ": " << t.reason;
    if (t.metric) c.measured[t.key] = *t.metric;
  }
  for (size_t i : tied_with_best(Metric::throughput, trials, 3))
    c.within_noise.push_back(trials[i].key);
  if (!c.measured.empty()) c.measured_best = best_of(c.measured);
  c.predicted = predict(o, c.terms);
  if (!c.predicted.empty()) c.predicted_best = best_of(c.predicted);
  return c;
}

inline std::string figures(const std::string& name, const FlipCase& c) {
  std::string s = name + ":\n";
  for (const auto& [key, v] : c.measured) {
    s += fmt::format("  {:<24} measured {:8.2f} samples/s, predicted {:8.2f} samples/s\n", key, v,
                     c.predicted.count(key) ? c.predicted.at(key) : 0.0);
    if (!c.terms.count(key)) continue;
    s += "   ";
    for (size_t f = 0; f < kFeatureCount; ++f)
      s += fmt::format(" {} {:.1f} ms", feature_name(f), c.terms.at(key).x[f] * 1e3);
    s += "\n";
  }
  return s + fmt::format("  measured best {}, predicted best {}, within noise of the best: {}\n",
                         c.measured_best, c.predicted_best, fmt::join(c.within_noise, ", "));
}

// The sweep ran both candidates, and its pick is what its recorded numbers
// decide: the fastest trial, or one the tuner could not tell apart from it
// (its tie-break), named on its "best:" line.
inline void expect_the_pick_follows_the_numbers(const std::string& name, const FlipCase& c) {
  ASSERT_EQ(c.measured.size(), 2u) << name << "\n" << c.output;
  ASSERT_EQ(c.predicted.size(), 2u) << name;
  ASSERT_FALSE(c.within_noise.empty()) << name;
  EXPECT_EQ(c.within_noise.front(), c.measured_best) << figures(name, c);
  const bool named = std::any_of(c.within_noise.begin(), c.within_noise.end(), [&](auto& key) {
    return c.output.find("best: " + key) != std::string::npos;
  });
  EXPECT_TRUE(named) << figures(name, c) << c.output;
}

// Both cases of a flip, and what the test learnt from them.
struct FlipCases {
  FlipCase unshaped, shaped;
  std::string all;  // both cases' figures (for the callers' messages)
};

// Both cases of a flip: on 2 fresh test hosts with unshaped links, then on 2
// with links shaped by `shaping` (`testcluster.sh up` options, e.g. "--rate
// 500mbit"); prints their figures. Skips or fails the test as
// HYBRID_REQUIRE_CLUSTER does: the caller returns when IsSkipped() or
// HasFatalFailure().
inline void run_flip_cases(const json& config, const json& space, const std::string& shaping,
                           FlipCases& c) {
  const test::TempDir dir;
  {
    hybrid::test::TestCluster cluster(2);
    HYBRID_REQUIRE_CLUSTER(cluster);
    c.unshaped = run_flip_case(cluster, dir, "unshaped", config, space);
  }
  {
    hybrid::test::TestCluster cluster(2, shaping);
    HYBRID_REQUIRE_CLUSTER(cluster);
    c.shaped = run_flip_case(cluster, dir, "shaped", config, space);
  }
  c.all = figures("unshaped", c.unshaped) + figures("shaped (" + shaping + ")", c.shaped);
  std::cout << c.all;
}

// Each case's pick follows its numbers (a failed check of one still checks the other).
inline void expect_the_picks_follow_the_numbers(const FlipCases& c) {
  expect_the_pick_follows_the_numbers("unshaped", c.unshaped);
  expect_the_pick_follows_the_numbers("shaped", c.shaped);
}

}  // namespace hybrid::autotune
