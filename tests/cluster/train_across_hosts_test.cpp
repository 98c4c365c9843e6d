// hybrid-train across test hosts (network namespaces, Open MPI over TCP between
// them, shared memory within one): per-step losses equal the one-host run's,
// each rank's host and place on it are recorded and printed, and collectives
// that crossed hosts are booked as inter-host in the store and the report.
// With each host standing in for a separate machine (HYBRID_MACHINE_ID = its
// host name), the other host's ranks hand their rows to rank 0 over TCP and the
// store holds every rank as before.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "profiler/store/run_store.h"
#include "tests/cluster/test_cluster.h"
#include "tests/engine/engine_test_util.h"

namespace hybrid {
namespace {

constexpr int kSteps = 6;

struct ClusterRun {
  int exit_code = -1;
  std::string output;
  std::vector<double> losses;
  std::vector<profiler::RankInfo> ranks;
  std::vector<profiler::CommStatRow> comm;
  std::string db;
  std::string integrity;
  profiler::RunStatus status = profiler::RunStatus::running;
  // Table → rank → rows of that rank, for the tables every rank writes.
  std::map<std::string, std::map<int, size_t>> rows;
};

// Before hybrid-train: each rank's machine id is its host's name, as if the
// test hosts were separate machines (they share one kernel, hence one boot id).
const std::string kMachinePerHost = "sh -c 'HYBRID_MACHINE_ID=$(uname -n) exec \"$0\" \"$@\"' ";

ClusterRun train(const test::TempDir& dir, const std::string& name, const std::string& launcher,
                 int stage, const std::string& wrap = "") {
  const std::string cfg = dir / (name + ".json");
  ClusterRun run;
  run.db = dir / (name + ".db");
  test::write_json(cfg, test::tiny_config_json({{"comms_logger", {{"enabled", true}}},
                                                {"zero_optimization",
                                                 {{"stage", stage},
                                                  {"overlap_comm", true},
                                                  {"reduce_bucket_size", 3000},
                                                  {"allgather_bucket_size", 5000}}}}));
  const auto r = test::run_command(launcher + wrap + test::tool("hybrid-train") + " --config " +
                                   cfg + " --steps " + std::to_string(kSteps) + " --db " + run.db);
  run.exit_code = r.exit_code;
  run.output = r.output;
  if (r.exit_code != 0) return run;
  profiler::RunStore store(run.db, profiler::OpenMode::read_only);
  const auto runs = store.list_runs();
  if (runs.size() != 1) return run;
  for (const auto& s : store.steps(runs[0].id)) run.losses.push_back(s.loss);
  run.ranks = store.ranks(runs[0].id);
  run.comm = store.comm_stats(runs[0].id);
  run.integrity = store.integrity_check();
  run.status = runs[0].status;
  for (const auto& x : run.ranks) ++run.rows["run_ranks"][x.rank];
  for (const auto& x : store.step_ranks(runs[0].id)) ++run.rows["step_ranks"][x.rank];
  for (const auto& x : store.layer_stats(runs[0].id)) ++run.rows["layer_stats"][x.rank];
  for (const auto& x : store.memory(runs[0].id)) ++run.rows["memory"][x.rank];
  for (const auto& x : store.events(runs[0].id).events) ++run.rows["events"][x.rank];
  for (const auto& x : run.comm) ++run.rows["comm_stats"][x.rank];
  return run;
}

void expect_same_losses(const ClusterRun& ref, const ClusterRun& run, const std::string& what) {
  ASSERT_EQ(run.losses.size(), size_t(kSteps)) << what << "\n" << run.output;
  ASSERT_EQ(ref.losses.size(), size_t(kSteps)) << ref.output;
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(run.losses[s], ref.losses[s], 1e-6 * std::abs(ref.losses[s]))
        << what << ", step " << s;
}

void expect_links(const ClusterRun& run, const std::string& link) {
  ASSERT_FALSE(run.comm.empty()) << run.output;
  for (const auto& c : run.comm) EXPECT_EQ(c.link, link) << c.op << " " << c.bytes;
}

TEST(TrainAcrossHosts, FourRanksOnTwoAndFourHostsMatchOneHost) {
  test::TestCluster cluster(4);
  HYBRID_REQUIRE_CLUSTER(cluster);
  test::TempDir dir;
  const auto one_host = train(dir, "one_host", test::launcher(4), 2);
  ASSERT_EQ(one_host.exit_code, 0) << one_host.output;
  expect_links(one_host, "intra_host");

  const auto two = train(dir, "two_hosts", cluster.mpirun(dir.path(), 4, 2), 2);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  expect_same_losses(one_host, two, "2 hosts x 2 ranks");
  expect_links(two, "inter_host");
  EXPECT_NE(two.output.find("ranks: 2 hosts: hyb-node1 ranks 0-1, hyb-node2 ranks 2-3"),
            std::string::npos)
      << two.output;
  ASSERT_EQ(two.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(two.ranks[r].host, r < 2 ? "hyb-node1" : "hyb-node2") << "rank " << r;
    EXPECT_EQ(two.ranks[r].local_rank, r % 2) << "rank " << r;
    EXPECT_EQ(two.ranks[r].local_size, 2) << "rank " << r;
    EXPECT_GE(two.ranks[r].threads, 1) << "rank " << r;
    EXPECT_GT(two.ranks[r].host_memory_bytes, 0u) << "rank " << r;
  }

  const auto four = train(dir, "four_hosts", cluster.mpirun(dir.path(), 4, 1), 2);
  ASSERT_EQ(four.exit_code, 0) << four.output;
  expect_same_losses(one_host, four, "4 hosts x 1 rank");
  expect_links(four, "inter_host");
  ASSERT_EQ(four.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(four.ranks[r].host, "hyb-node" + std::to_string(r + 1));
    EXPECT_EQ(four.ranks[r].local_size, 1);
  }

  // The report splits bandwidth by link class.
  const auto report = test::run_command(std::string(HYBRID_BINARY_DIR) +
                                        "/profiler/hybrid-prof report comm --run 1 --db " + two.db);
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("By link"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("inter_host"), std::string::npos) << report.output;
}

TEST(TrainAcrossHosts, TwoRanksOnTwoHostsMatchOneHostAtStage3) {
  test::TestCluster cluster(2);
  HYBRID_REQUIRE_CLUSTER(cluster);
  test::TempDir dir;
  const auto one_host = train(dir, "one_host", test::launcher(2), 3);
  ASSERT_EQ(one_host.exit_code, 0) << one_host.output;
  const auto two = train(dir, "two_hosts", cluster.mpirun(dir.path(), 2, 1), 3);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  expect_same_losses(one_host, two, "2 hosts x 1 rank, ZeRO-3");
  expect_links(two, "inter_host");
}

TEST(TrainAcrossHosts, HostsAsSeparateMachinesHandTheirRowsToRankZero) {
  test::TestCluster cluster(2);
  HYBRID_REQUIRE_CLUSTER(cluster);
  test::TempDir dir;
  const auto shared = train(dir, "one_machine", cluster.mpirun(dir.path(), 4, 2), 2);
  ASSERT_EQ(shared.exit_code, 0) << shared.output;
  const auto apart =
      train(dir, "two_machines", cluster.mpirun(dir.path(), 4, 2), 2, kMachinePerHost);
  ASSERT_EQ(apart.exit_code, 0) << apart.output;
  EXPECT_NE(apart.output.find("run store: ranks 2,3 run on other machines than rank 0"),
            std::string::npos)
      << apart.output;
  expect_same_losses(shared, apart, "2 machines x 2 ranks");
  EXPECT_EQ(apart.integrity, "ok");
  EXPECT_EQ(apart.status, profiler::RunStatus::ok);
  // hyb-node2's ranks are there, as themselves, with as many rows as when they
  // wrote them into the store directly.
  ASSERT_EQ(apart.ranks.size(), 4u) << apart.output;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(apart.ranks[r].host, r < 2 ? "hyb-node1" : "hyb-node2") << "rank " << r;
    EXPECT_EQ(apart.ranks[r].local_rank, r % 2) << "rank " << r;
  }
  ASSERT_EQ(shared.rows.at("step_ranks").size(), 4u);
  ASSERT_EQ(shared.rows.at("events").size(), 4u);
  EXPECT_EQ(apart.rows, shared.rows);
  expect_links(apart, "inter_host");
}

}  // namespace
}  // namespace hybrid
