// hybrid-tune --hostfile across two test hosts: every trial runs with one rank
// on each host, the sweep completes, and the best config it writes trains
// across the same hosts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_cluster.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;

TEST(TuneAcrossHosts, SweepOverTwoHostsCompletesAndItsBestConfigRuns) {
  hybrid::test::TestCluster cluster(2);
  HYBRID_REQUIRE_CLUSTER(cluster);
  test::TempDir dir;
  const std::string hostfile = dir / "hosts";
  std::ofstream(hostfile) << "hyb-node1 slots=1\nhyb-node2 slots=1\n";
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json", json::parse(R"({"mbs": [1, 2], "stage": [1, 2]})"));
  const std::string db = dir / "tune.db", best = dir / "best.json";
  const auto r = test::run_command(fmt::format(
      "env {} {} --config {} --space {} --nprocs 2 --hostfile {} --steps 4 --start-step 2 "
      "--early-stop 0 --no-probe --db {} --out {}",
      cluster.env(), test::tune_bin(), dir / "cfg.json", dir / "space.json", hostfile, db, best));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].status, profiler::SweepStatus::done);
  const auto trials = store.trials(sweeps[0].id);
  ASSERT_EQ(trials.size(), 4u) << r.output;
  for (const auto& t : trials) {
    EXPECT_EQ(t.status, profiler::TrialStatus::ok) << t.key << ": " << t.reason;
    ASSERT_TRUE(t.run_id.has_value()) << t.key;
    const auto ranks = store.ranks(*t.run_id);
    ASSERT_EQ(ranks.size(), 2u) << t.key;
    EXPECT_EQ(ranks[0].host, "hyb-node1") << t.key;
    EXPECT_EQ(ranks[1].host, "hyb-node2") << t.key;
  }
  // The sweep's identity holds the hosts: another cluster is another sweep.
  EXPECT_NE(sweeps[0].space_json.find("hyb-node2"), std::string::npos) << sweeps[0].space_json;

  ASSERT_TRUE(std::filesystem::exists(best)) << r.output;
  const auto run =
      test::run_command(fmt::format("{}{} --config {} --steps 2 --quiet",
                                    cluster.mpirun(dir.path(), 2, 1), test::train_bin(), best));
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

}  // namespace
}  // namespace hybrid::autotune
