// The run store when ranks run on other machines than rank 0's (standing in:
// HYBRID_MACHINE_ID per rank, Open MPI's MPMD form, under real mpirun). Those
// ranks never open the file, whose WAL index is shared memory on one machine;
// they hand their rows to rank 0, and the store ends up as if every rank had
// written its own: the same rows per rank and table as the run with every rank
// on one machine, each rank's own host and pid, integrity ok, the run finished.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

struct StoredRun {
  int exit_code = -1;
  std::string output;
  std::string integrity;
  std::vector<profiler::RunInfo> runs;
  std::vector<profiler::RankInfo> ranks;
  // Table name → rank → rows of that rank.
  std::map<std::string, std::map<int, size_t>> rows;
  std::map<int, int64_t> collectives;  // rank → Σ comm_stats.count
};

// One rank per machine id given, in rank order.
StoredRun train_on(const test::TempDir& dir, const std::string& name,
                   const std::vector<std::string>& machines) {
  const std::string db = dir / (name + ".db"), cfg = dir / (name + ".json");
  test::write_json(cfg, test::tiny_config_json({{"wall_clock_breakdown", true},
                                                {"zero_optimization", {{"stage", 2}}}}));
  std::string cmd = HYBRID_MPIEXEC;
  for (size_t r = 0; r < machines.size(); ++r)
    cmd += fmt::format("{} -np 1 env HYBRID_MACHINE_ID={} {} --config {} --steps 6 --db {}",
                       r ? " :" : "", machines[r], test::tool("hybrid-train"), cfg, db);
  StoredRun out;
  const auto r = test::run_command(cmd);
  out.exit_code = r.exit_code;
  out.output = r.output;
  if (r.exit_code != 0) return out;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  out.integrity = store.integrity_check();
  out.runs = store.list_runs();
  if (out.runs.size() != 1) return out;
  const int64_t id = out.runs[0].id;
  out.ranks = store.ranks(id);
  auto& t = out.rows;
  for (const auto& x : out.ranks) ++t["run_ranks"][x.rank];
  for (const auto& x : store.step_ranks(id)) ++t["step_ranks"][x.rank];
  for (const auto& x : store.step_timers(id)) ++t["step_timers"][x.rank];
  for (const auto& x : store.layer_stats(id)) ++t["layer_stats"][x.rank];
  for (const auto& x : store.memory(id)) ++t["memory"][x.rank];
  for (const auto& x : store.gpu_timeline(id)) ++t["gpu_timeline"][x.rank];
  for (const auto& x : store.events(id).events) ++t["events"][x.rank];
  for (const auto& x : store.comm_stats(id)) {
    ++t["comm_stats"][x.rank];
    out.collectives[x.rank] += x.count;
  }
  return out;
}

void expect_every_rank_recorded(const std::vector<std::string>& machines) {
  const int n = int(machines.size());
  test::TempDir dir;
  const auto one = train_on(dir, "one_machine", std::vector<std::string>(machines.size(), "here"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto split = train_on(dir, "machines", machines);
  ASSERT_EQ(split.exit_code, 0) << split.output;

  std::vector<int> away;
  for (int r = 1; r < n; ++r)
    if (machines[size_t(r)] != machines[0]) away.push_back(r);
  EXPECT_NE(split.output.find(fmt::format("run store: ranks {} run on other machines than rank 0",
                                          fmt::join(away, ","))),
            std::string::npos)
      << split.output;
  EXPECT_EQ(one.output.find("run store: ranks"), std::string::npos) << one.output;

  EXPECT_EQ(split.integrity, "ok");
  ASSERT_EQ(split.runs.size(), 1u);
  EXPECT_EQ(split.runs[0].status, profiler::RunStatus::ok);  // not left `running`
  EXPECT_EQ(split.runs[0].world_size, n);

  // Every rank, in every table a rank writes, as many rows as on one machine.
  const std::set<std::string> every_rank = {"run_ranks", "step_ranks", "step_timers", "layer_stats",
                                            "memory",    "events",     "comm_stats"};
  for (const auto& table : every_rank) {
    ASSERT_EQ(one.rows.count(table), 1u) << table << " empty on one machine";
    EXPECT_EQ(one.rows.at(table).size(), size_t(n)) << table;
  }
  EXPECT_EQ(split.rows, one.rows);
  EXPECT_EQ(split.collectives, one.collectives);

  // Each rank as it ran: its own process, not rank 0's.
  ASSERT_EQ(split.ranks.size(), size_t(n));
  std::set<int64_t> pids;
  for (const auto& r : split.ranks) {
    pids.insert(r.pid);
    EXPECT_FALSE(r.host.empty()) << "rank " << r.rank;
    EXPECT_GT(r.epoch_unix_ns, 0) << "rank " << r.rank;
    EXPECT_GE(r.threads, 1) << "rank " << r.rank;
  }
  EXPECT_EQ(pids.size(), size_t(n));
}

TEST(StoreAcrossMachines, TwoRanksOnTwoMachinesRecordLikeOne) {
  expect_every_rank_recorded({"here", "elsewhere"});
}

TEST(StoreAcrossMachines, FourRanksOnThreeMachinesRecordLikeOne) {
  expect_every_rank_recorded({"here", "elsewhere", "here", "yonder"});
}

}  // namespace
}  // namespace hybrid
