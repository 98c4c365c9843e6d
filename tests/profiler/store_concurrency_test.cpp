// Several processes write one database at once, as the ranks of a run and the
// trials of a sweep do, while a read-only reader polls it like the viewer.
// Nothing may be lost (exact row counts), no reader may see half a transaction,
// and the file must pass PRAGMA integrity_check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "profiler/store/connection.h"
#include "profiler/store/run_store.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

using test::TempDir;

constexpr int kWriters = 4;
constexpr int kBatches = 10;
constexpr int kStepsPerBatch = 10;
constexpr int kEventsPerBatch = 2000;       // into the writer's own run
constexpr int kSharedEventsPerBatch = 500;  // into the run all writers share, as ranks

std::vector<Event> make_events(int n, int rank, int batch) {
  std::vector<Event> ev;
  for (int i = 0; i < n; ++i) {
    Event e;
    e.start_ns = int64_t(batch) * 1'000'000 + i * 100;
    e.dur_ns = 50;
    e.step = batch;
    e.rank = uint16_t(rank);
    e.name_id = uint32_t(i % 3);
    e.module_id = i % 7;
    e.category = Category::forward;
    ev.push_back(e);
  }
  return ev;
}

// One writer process: a run of its own (steps, events, finish) and, as `rank`, its
// share of the common run (rank registration, per-rank steps, events, layer stats).
bool writer(const std::filesystem::path& db, int rank, int64_t shared_run) {
  RunStore store(db);
  store.register_rank(shared_run, rank, 1'700'000'000'000'000'000 + rank);
  RunInfo info;
  info.name = "writer " + std::to_string(rank);
  const int64_t own = store.create_run(info);
  const std::vector<std::string> names = {"forward", "backward", "all_reduce"};
  for (int b = 0; b < kBatches; ++b) {
    std::vector<StepRow> steps;
    std::vector<StepRankRow> ranks;
    for (int s = 0; s < kStepsPerBatch; ++s) {
      const int step = b * kStepsPerBatch + s;
      steps.push_back({step, 10.0 - 0.01 * step, 1e-3, 1, false, 1, 100, 1000, 1e9});
      ranks.push_back({step, rank, 80, 20, 5});
    }
    store.add_steps(own, steps);
    store.add_step_ranks(shared_run, ranks);
    store.add_events(own, make_events(kEventsPerBatch, 0, b), names);
    store.add_events(shared_run, make_events(kSharedEventsPerBatch, rank, b), names);
    store.add_layer_stats(shared_run,
                          std::vector<LayerStat>{{rank, 0, b, 100, 200, 1, 2, 0, 0, 1}});
  }
  store.finish_run(own, RunStatus::ok);
  return true;
}

// Polls with a read-only connection until every writer's run is finished (or the
// parent says the writers are gone). Each add_events call is one transaction, so
// event counts must always be whole batches.
bool reader(const std::filesystem::path& db, int64_t shared_run,
            const std::filesystem::path& writers_done) {
  RunStore store(db, OpenMode::read_only);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int64_t last_shared = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const bool last_poll = std::filesystem::exists(writers_done);
    int finished = 0;
    for (const RunInfo& r : store.list_runs()) {
      if (r.id == shared_run) continue;
      const int64_t n = store.event_count(r.id);
      if (n % kEventsPerBatch != 0) {
        std::cerr << "reader saw " << n << " events of run " << r.id << ": half a batch\n";
        return false;
      }
      if (r.status == RunStatus::ok) ++finished;
    }
    const int64_t shared = store.event_count(shared_run);
    if (shared % kSharedEventsPerBatch != 0 || shared < last_shared) {
      std::cerr << "reader saw " << shared << " shared events after " << last_shared << "\n";
      return false;
    }
    last_shared = shared;
    if (finished == kWriters) return true;
    if (last_poll) {
      std::cerr << "reader: only " << finished << " writers finished\n";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::cerr << "reader: writers did not finish in time\n";
  return false;
}

TEST(StoreConcurrency, WritersAndReaderInSeparateProcessesLoseNothing) {
  TempDir dir;
  const auto db = dir / "hybrid.db";
  int64_t shared = 0;
  {
    RunStore store(db);  // rank 0 creates the run; the id is what it broadcasts
    RunInfo info;
    info.name = "shared";
    info.world_size = kWriters;
    shared = store.create_run(info);
  }
  const auto writers_done = dir / "writers_done";
  const pid_t reader_pid = test::fork_child([&] { return reader(db, shared, writers_done); });
  std::vector<pid_t> writers;
  for (int r = 0; r < kWriters; ++r)
    writers.push_back(test::fork_child([&, r] { return writer(db, r, shared); }));
  for (int r = 0; r < kWriters; ++r)
    EXPECT_EQ(test::wait_child(writers[size_t(r)]), 0) << "writer " << r;
  std::ofstream(writers_done).close();
  EXPECT_EQ(test::wait_child(reader_pid), 0) << "reader";

  RunStore store(db, OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), size_t(kWriters + 1));
  for (const RunInfo& r : runs) {
    if (r.id == shared) continue;
    EXPECT_EQ(r.status, RunStatus::ok) << r.name;
    EXPECT_EQ(store.steps(r.id).size(), size_t(kBatches * kStepsPerBatch)) << r.name;
    EXPECT_EQ(store.event_count(r.id), kBatches * kEventsPerBatch) << r.name;
  }
  EXPECT_EQ(store.ranks(shared).size(), size_t(kWriters));
  EXPECT_EQ(store.step_ranks(shared).size(), size_t(kWriters * kBatches * kStepsPerBatch));
  EXPECT_EQ(store.event_count(shared), kWriters * kBatches * kSharedEventsPerBatch);
  EXPECT_EQ(store.layer_stats(shared).size(), size_t(kWriters * kBatches));
  for (int r = 0; r < kWriters; ++r) {
    EventFilter f;
    f.rank = r;
    EXPECT_EQ(store.events(shared, f).events.size(), size_t(kBatches * kSharedEventsPerBatch));
  }
  EXPECT_EQ(test::query_sql(db, "SELECT count(*) FROM event_names"), "3");
}

TEST(StoreConcurrency, WriterWaitsForALockHeldElsewhereInsteadOfFailing) {
  TempDir dir;
  const auto db = dir / "busy.db";
  RunStore store(db);
  const int64_t run = store.create_run({});
  std::atomic<bool> locked{false}, committing{false};
  std::thread holder([&] {
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    sqlite3_exec(h, "BEGIN IMMEDIATE; UPDATE runs SET name = 'held'", nullptr, nullptr, nullptr);
    locked = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    committing = true;
    sqlite3_exec(h, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  });
  while (!locked) std::this_thread::yield();
  store.add_steps(run, std::vector<StepRow>{{0, 1, 1, 1, false, 1, 1, 1, 1}});
  EXPECT_TRUE(committing.load()) << "the write went through while another connection held the lock";
  holder.join();
  EXPECT_EQ(store.steps(run).size(), 1u);
  EXPECT_EQ(store.get_run(run).name, "held");
}

// Issue 32: after 30.4 s of waiting (three attempts of 10 s, and the pauses
// between them) the error said "held the lock for longer than 10 s". It now
// says the timeout of one attempt and what all of them waited, measured.
TEST(StoreConcurrency, BusyErrorSaysTheTimeWaitedInAllAndTheTimeout) {
  TempDir dir;
  const auto db = dir / "held.db";
  { RunStore init(db); }
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  store::Connection conn(db, /*read_only=*/false, std::chrono::milliseconds(200));
  const auto started = std::chrono::steady_clock::now();
  std::string message;
  try {
    conn.write_transaction([] {});
    ADD_FAILURE() << "the write went through while another connection held the lock";
  } catch (const StoreBusyError& e) {
    message = e.what();
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_THAT(message, testing::HasSubstr("another process holds the lock (busy timeout 0.2 s)"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      message, m, std::regex(R"(gave up after waiting ([0-9.]+) s in all over 3 attempts)")))
      << message;
  const double waited = std::stod(m[1]);
  EXPECT_GE(waited, 0.6) << message;             // three attempts of 0.2 s at least
  EXPECT_LE(waited, elapsed + 0.05) << message;  // and no more than it took
}

}  // namespace
}  // namespace hybrid::profiler
