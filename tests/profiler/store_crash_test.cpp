// Crash safety: a writer killed with SIGKILL in the middle of its writes leaves a
// consistent database (whole transactions only) and a `running` run that
// mark_stale_runs() marks failed; live writers, finished runs and other hosts'
// runs are left alone unless their heartbeat is older than the timeout given.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "profiler/store/run_store.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

constexpr int kBatch = 5000;

class StoreCrash : public ::testing::Test {
 protected:
  // Sets columns of run `run`'s row behind the store's back (another writer's doing).
  void update_run(int64_t run, const std::string& assignments) const {
    test::exec_sql(db_, "UPDATE runs SET " + assignments + " WHERE id = " + std::to_string(run));
  }

  test::TempDir dir_;
  const std::string db_ = dir_ / "runs.db";
};

TEST_F(StoreCrash, KilledWriterLeavesWholeTransactionsAndIsMarkedFailed) {
  { RunStore init(db_); }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = test::fork_child([&] {
    close(fds[0]);
    RunStore store(db_);
    const int64_t run = store.create_run({});
    if (write(fds[1], &run, sizeof run) != sizeof run) return false;
    std::vector<Event> events(kBatch);
    for (int i = 0; i < kBatch; ++i) events[size_t(i)].start_ns = i;
    const std::vector<std::string> names = {"op"};
    for (;;) {  // until killed: nearly all of the time is spent inside a transaction
      store.add_events(run, events, names);
      if (write(fds[1], "x", 1) != 1) return false;
    }
  });
  close(fds[1]);
  int64_t run = 0;
  ASSERT_EQ(read(fds[0], &run, sizeof run), ssize_t(sizeof run));
  for (int committed = 0; committed < 3;) {  // let three batches commit first
    char c;
    ASSERT_EQ(read(fds[0], &c, 1), 1);
    ++committed;
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  EXPECT_EQ(test::wait_child(child), 128 + SIGKILL);
  close(fds[0]);

  RunStore store(db_);  // recovers the WAL left behind
  EXPECT_EQ(store.integrity_check(), "ok");
  const int64_t events = store.event_count(run);
  EXPECT_GE(events, 3 * kBatch);
  EXPECT_EQ(events % kBatch, 0) << "a killed transaction left part of its rows";
  EXPECT_EQ(store.get_run(run).status, RunStatus::running);

  const int64_t alive = store.create_run({});  // this process: still running
  RunInfo finished_info;
  const int64_t finished = store.create_run(finished_info);
  store.finish_run(finished, RunStatus::ok);
  update_run(finished, "writer_pid = " + std::to_string(child));  // dead too, but it finished

  const auto marked = store.mark_stale_runs();
  EXPECT_EQ(marked, std::vector<int64_t>{run});
  const RunInfo dead = store.get_run(run);
  EXPECT_EQ(dead.status, RunStatus::failed);
  EXPECT_NE(dead.error.find("writer process " + std::to_string(child)), std::string::npos)
      << dead.error;
  EXPECT_NE(dead.error.find("ended without finishing the run"), std::string::npos) << dead.error;
  ASSERT_TRUE(dead.finished_at.has_value());
  EXPECT_EQ(store.get_run(alive).status, RunStatus::running);
  EXPECT_EQ(store.get_run(finished).status, RunStatus::ok);
  EXPECT_TRUE(store.mark_stale_runs().empty());  // idempotent
}

TEST_F(StoreCrash, ReusedPidOfAnotherProcessCountsAsDead) {
  RunStore store(db_);
  const int64_t mine = store.create_run({});
  const int64_t reused = store.create_run({});
  // Same pid (this live process) but another start time: the writer it names is gone.
  update_run(reused, "writer_start = writer_start + 12345");
  EXPECT_EQ(store.mark_stale_runs(), std::vector<int64_t>{reused});
  EXPECT_EQ(store.get_run(mine).status, RunStatus::running);
}

TEST_F(StoreCrash, OtherHostsOnlyByHeartbeatTimeout) {
  RunStore store(db_);
  const int64_t silent = store.create_run({});
  const int64_t fresh = store.create_run({});
  update_run(silent, "writer_host = 'other-node', writer_pid = 1, last_update = last_update - 600");
  update_run(fresh, "writer_host = 'other-node', writer_pid = 1");
  // A pid on another host says nothing here: without a timeout both stay running.
  EXPECT_TRUE(store.mark_stale_runs().empty());
  EXPECT_EQ(store.mark_stale_runs(300.0), std::vector<int64_t>{silent});
  const RunInfo r = store.get_run(silent);
  EXPECT_EQ(r.status, RunStatus::failed);
  EXPECT_NE(r.error.find("no write from other-node"), std::string::npos) << r.error;
  EXPECT_EQ(store.get_run(fresh).status, RunStatus::running);
}

}  // namespace
}  // namespace hybrid::profiler
