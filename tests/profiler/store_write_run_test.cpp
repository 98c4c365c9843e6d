// RunStore::write_run: a whole run (an import) in one transaction. Everything it
// holds reads back equal, and a failure in the middle of the write leaves no trace.
#include <gtest/gtest.h>

#include "profiler/store/run_store.h"
#include "store_test_util.h"
#include "tests/profiler/full_rows.h"

namespace hybrid::profiler {
namespace {

RunRecord sample_record() {
  RunRecord r;
  r.run.name = "imported";
  r.run.source = "kineto";
  r.run.backend = "cuda";
  r.run.device = "NVIDIA H200";
  r.run.world_size = 8;
  r.run.status = RunStatus::ok;
  r.run.started_at = 1.7e9;
  r.run.finished_at = 1.7e9 + 2;
  r.ranks = {{0, "node-a", 41, 1'700'000'000'000'000'000},
             {3, "node-b", 42, 1'700'000'000'000'001'000}};
  r.modules = {{0, -1, "## forward ##", "scope", 0, 0, 0}, {1, 0, "block", "scope", 1, 0, 0}};
  r.step_ranks = {{551, 0, 1.5, 0.5, 0.25}, {551, 3, 1.25, 0.5, 0.125}};
  r.layers = {test::full_layer_stat(3, 1, 551)};
  r.gpu = {test::full_gpu_timeline(3)};
  r.events = {{test::full_event(3, 1, 551, 1)}, {"gemm", "ncclKernel_AllReduce"}};
  return r;
}

TEST(WriteRun, EverythingReadsBackEqual) {
  test::TempDir dir;
  RunStore store(dir / "s.db");
  const RunRecord r = sample_record();
  const int64_t id = store.write_run(r);
  const RunInfo run = store.get_run(id);
  EXPECT_EQ(run.source, "kineto");
  EXPECT_EQ(run.status, RunStatus::ok);
  EXPECT_EQ(run.device, "NVIDIA H200");
  ASSERT_TRUE(run.finished_at.has_value());
  EXPECT_DOUBLE_EQ(*run.finished_at, 1.7e9 + 2);
  EXPECT_EQ(store.ranks(id), r.ranks);  // host and pid as given, not this process's
  EXPECT_EQ(store.modules(id), r.modules);
  EXPECT_EQ(store.step_ranks(id), r.step_ranks);
  EXPECT_EQ(store.layer_stats(id), r.layers);
  EXPECT_EQ(store.gpu_timeline(id), r.gpu);
  const EventSet ev = store.events(id);
  ASSERT_EQ(ev.events.size(), 1u);
  EXPECT_EQ(ev.events[0].scope, Category::backward);
  EXPECT_EQ(ev.names[ev.events[0].name_id], "ncclKernel_AllReduce");
  EXPECT_EQ(store.load_profile(id).gpu, r.gpu);
}

TEST(WriteRun, AFailureMidWriteLeavesNothing) {
  test::TempDir dir;
  const auto db = dir / "s.db";
  { RunStore store(db); }
  // The last table written is gone: the run, ranks, modules and layers before it roll back.
  test::exec_sql(db, "DROP TABLE gpu_timeline");
  RunStore store(db);
  EXPECT_THROW(store.write_run(sample_record()), StoreError);
  EXPECT_EQ(test::query_sql(db, "SELECT count(*) FROM runs"), "0");
  EXPECT_EQ(test::query_sql(db, "SELECT count(*) FROM run_ranks"), "0");
  EXPECT_EQ(test::query_sql(db, "SELECT count(*) FROM layer_stats"), "0");
}

TEST(WriteRun, RefusesARunningRunAndBadNameIds) {
  test::TempDir dir;
  RunStore store(dir / "s.db");
  RunRecord r = sample_record();
  r.run.status = RunStatus::running;
  EXPECT_THROW(store.write_run(r), std::invalid_argument);
  r = sample_record();
  r.events.events[0].name_id = 9;
  EXPECT_THROW(store.write_run(r), std::invalid_argument);
  EXPECT_TRUE(store.list_runs().empty());
}

}  // namespace
}  // namespace hybrid::profiler
