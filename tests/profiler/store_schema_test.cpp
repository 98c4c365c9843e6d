// Schema versions and opening rules: creation, migration from every earlier
// version (frozen DDL fixtures in tests/profiler/data), refusal of newer versions,
// of non-SQLite and foreign SQLite files, and the read-only mode.
#include <gtest/gtest.h>

#include <fstream>

#include "profiler/store/run_store.h"
#include "store_test_util.h"
#include "tests/common/error_of.h"

namespace hybrid::profiler {
namespace {

using test::exec_sql;
using test::query_sql;
using test::TempDir;

std::string error_of(const std::function<void()>& fn) {
  return hybrid::test::error_of<StoreError>(fn, "(no StoreError)");
}

std::filesystem::path fixture(int version) {
  return std::filesystem::path(HYBRID_SOURCE_DIR) / "tests/profiler/data" /
         ("store_schema_v" + std::to_string(version) + ".sql");
}

// A file a version-`version` build wrote (its frozen DDL), holding the rows
// `rows` inserts.
std::filesystem::path old_store(const TempDir& dir, int version, const std::string& rows) {
  const auto db = dir / ("v" + std::to_string(version) + ".db");
  exec_sql(db, test::read_file(fixture(version)));
  exec_sql(db, rows);
  return db;
}

// Run 4 of two ranks, rank 1's row on node-a (the columns of every version).
std::string run_4_of_two_ranks(const std::string& name, const std::string& status) {
  return "INSERT INTO runs (id, name, started_at, last_update, status, world_size) VALUES (4, '" +
         name + "', 1700000000.0, 1700000100.0, '" + status +
         "', 2);"
         "INSERT INTO run_ranks (run_id, rank, host, pid, epoch_unix_ns) "
         "VALUES (4, 1, 'node-a', 99, 5);";
}

// Tables, indexes and their DDL, as SQLite keeps them.
std::string schema_of(const std::filesystem::path& db) {
  return query_sql(db, "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name");
}

TEST(StoreSchema, FreshDatabaseIsCurrentWalWithOurApplicationId) {
  TempDir dir;
  const auto db = dir / "sub/dir/fresh.db";  // directories are created
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 0);
  EXPECT_EQ(RunStore::schema_version(), 10);
  EXPECT_EQ(query_sql(db, "PRAGMA user_version"), "10");
  EXPECT_EQ(query_sql(db, "PRAGMA application_id"), std::to_string(0x48594252));
  EXPECT_EQ(query_sql(db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(store.integrity_check(), "ok");
  // Reopening changes nothing.
  const std::string before = schema_of(db);
  RunStore again(db);
  EXPECT_EQ(again.opened_schema_version(), 10);
  EXPECT_EQ(schema_of(db), before);
}

TEST(StoreSchema, MigratesFromEveryEarlierVersion) {
  TempDir dir;
  const auto fresh = dir / "fresh.db";
  { RunStore store(fresh); }
  for (int v = 1; v < RunStore::schema_version(); ++v) {
    SCOPED_TRACE("from version " + std::to_string(v));
    ASSERT_TRUE(std::filesystem::exists(fixture(v)))
        << "every released schema version needs a frozen fixture: " << fixture(v);
    const auto db = dir / ("v" + std::to_string(v) + ".db");
    exec_sql(db, test::read_file(fixture(v)));
    ASSERT_EQ(query_sql(db, "PRAGMA user_version"), std::to_string(v));
    // Rows an old build wrote (tables of version 1 exist in every version).
    exec_sql(db,
             "INSERT INTO runs (id, name, started_at, last_update, status, world_size) "
             "VALUES (7, 'old run', 1700000000.5, 1700000100.0, 'ok', 2);"
             "INSERT INTO steps VALUES (7, 0, 10.5, 0.001, 1.0, 0, 2.0, 100.0, 5000.0, 1e12);"
             "INSERT INTO event_names (id, name) VALUES (3, 'forward h.0');"
             "INSERT INTO events (run_id, rank, step, lane, category, name_id, module_id, "
             "start_ns, dur_ns, bytes, flops) VALUES (7, 1, 0, 0, 1, 3, 4, 1000, 500, 0, 123456);");

    RunStore store(db);
    EXPECT_EQ(store.opened_schema_version(), v);
    EXPECT_EQ(query_sql(db, "PRAGMA user_version"), std::to_string(RunStore::schema_version()));
    // The migrated file has exactly the schema of a fresh one.
    EXPECT_EQ(schema_of(db), schema_of(fresh));
    EXPECT_EQ(store.integrity_check(), "ok");
    // Old rows read back through the current code.
    const RunInfo run = store.get_run(7);
    EXPECT_EQ(run.name, "old run");
    EXPECT_EQ(run.status, RunStatus::ok);
    EXPECT_EQ(run.world_size, 2);
    ASSERT_EQ(store.steps(7).size(), 1u);
    EXPECT_EQ(store.steps(7)[0].loss, 10.5);
    const EventSet ev = store.events(7);
    ASSERT_EQ(ev.events.size(), 1u);
    EXPECT_EQ(ev.names.at(ev.events[0].name_id), "forward h.0");
    EXPECT_EQ(ev.events[0].flops, 123456u);
    EXPECT_EQ(ev.events[0].rank, 1);
    // New tables work, and point at old rows.
    const int64_t sweep = store.create_sweep({});
    TrialRow t;
    t.sweep_id = sweep;
    t.key = "k";
    t.run_id = 7;
    store.upsert_trial(t);
    EXPECT_EQ(store.find_trial(sweep, "k")->run_id, 7);
    // And new runs get ids after the old ones.
    EXPECT_GT(store.create_run({}), 7);
  }
}

// v4 -> v5 on a file a v4 build wrote, holding a finished sweep: its trials keep
// every v4 value, read back with no spread, not noisy, one attempt; the new
// columns and the tie_breaks table then take writes, and bad values are refused.
TEST(StoreSchema, V4SweepMigratesToV5WithTrialsIntactAndNoiseColumnsWritable) {
  TempDir dir;
  const auto db = old_store(
      dir, 4,
      "INSERT INTO runs (id, name, started_at, last_update, status) "
      "VALUES (3, 'trial run', 1700000000.0, 1700000001.0, 'ok');"
      "INSERT INTO sweeps (id, name, metric, status, created_at) "
      "VALUES (2, 'old sweep', 'latency_ms', 'done', 1700000000.0);"
      "INSERT INTO trials (sweep_id, key, config_json, status, reason, metric, latency_ms, "
      "samples_per_s, run_id, created_at, updated_at) VALUES (2, 'mbs=1', '{}', 'ok', "
      "'median of steps 4..16', 12.5, 12.5, 80.0, 3, 1700000000.0, 1700000002.0);"
      "INSERT INTO trials (sweep_id, key, status, reason, created_at, updated_at) "
      "VALUES (2, 'mbs=8', 'oom', 'OutOfMemoryError', 1700000000.0, 1700000003.0);");
  ASSERT_EQ(query_sql(db, "PRAGMA user_version"), "4");
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 4);
  EXPECT_EQ(query_sql(db, "PRAGMA user_version"), std::to_string(RunStore::schema_version()));
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto trials = store.trials(2);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].key, "mbs=1");
  EXPECT_EQ(trials[0].status, TrialStatus::ok);
  EXPECT_EQ(trials[0].metric, 12.5);
  EXPECT_EQ(trials[0].samples_per_s, 80.0);
  EXPECT_EQ(trials[0].run_id, 3);
  EXPECT_EQ(trials[0].reason, "median of steps 4..16");
  EXPECT_EQ(trials[0].updated_at, 1700000002.0);
  EXPECT_FALSE(trials[0].spread.has_value());
  EXPECT_FALSE(trials[0].noisy);
  EXPECT_EQ(trials[0].attempts, 1);
  EXPECT_EQ(trials[1].status, TrialStatus::oom);
  EXPECT_TRUE(store.tie_breaks(2).empty());

  TrialRow t = trials[0];
  t.spread = StepSpread{13, 12.5, 12.1, 13.0, 0.4, 0.05, 12.0, 13.2};
  t.noisy = true;
  t.attempts = 3;
  store.upsert_trial(t);
  const TrialRow got = *store.find_trial(2, "mbs=1");
  EXPECT_EQ(got.spread, t.spread);
  EXPECT_TRUE(got.noisy);
  EXPECT_EQ(got.attempts, 3);
  TieBreak tb;
  tb.sweep_id = 2;
  tb.candidates_json = R"([{"key": "mbs=1"}, {"key": "mbs=2"}])";
  tb.rounds = 3;
  tb.winner_key = "mbs=1";
  tb.decided = true;
  tb.summary = "confirmed";
  tb.id = store.add_tie_break(tb);
  const auto tbs = store.tie_breaks(2);
  ASSERT_EQ(tbs.size(), 1u);
  tb.created_at = tbs[0].created_at;
  EXPECT_EQ(tbs[0], tb);
  EXPECT_GT(tbs[0].created_at, 1e9);
  // The CHECKs hold on migrated tables too.
  EXPECT_THROW(exec_sql(db, "UPDATE trials SET noisy = 2 WHERE key = 'mbs=1'"), std::exception);
  EXPECT_EQ(query_sql(db, "SELECT noisy FROM trials WHERE key = 'mbs=1'"), "1");
  // Deleting the sweep takes its tie-breaks with it.
  exec_sql(db, "PRAGMA foreign_keys = ON; DELETE FROM sweeps WHERE id = 2");
  EXPECT_TRUE(store.tie_breaks(2).empty());
}

// v5 -> v6 on a file a v5 build wrote: its collective statistics keep every
// value and read back as intra-host (v5 builds ran on one host), its ranks get
// the one-host defaults; then the same (op, size) on both link classes is two
// rows, and a link class that is neither is refused.
TEST(StoreSchema, V5MigratesToV6CommStatsIntraHostTrialsIntact) {
  TempDir dir;
  const auto db =
      old_store(dir, 5,
                "INSERT INTO runs (id, name, started_at, last_update, status, world_size) "
                "VALUES (4, 'two ranks', 1700000000.0, 1700000001.0, 'ok', 2);"
                "INSERT INTO run_ranks VALUES (4, 1, 'node-a', 321, 1700000000000000000);"
                "INSERT INTO comm_stats VALUES (4, 1, 'all_reduce', 4096, 10, 5000, 400, 600, 8.5, "
                "12.75);");
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 5);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto ranks = store.ranks(4);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].host, "node-a");
  EXPECT_EQ(ranks[0].pid, 321);
  EXPECT_EQ(ranks[0].local_rank, 0);
  EXPECT_EQ(ranks[0].local_size, 1);
  EXPECT_EQ(ranks[0].threads, 0);
  const auto old = store.comm_stats(4);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0],
            (CommStatRow{1, "all_reduce", 4096, 10, 5000, 400, 600, 8.5, 12.75, "intra_host"}));

  CommStatRow across = old[0];
  across.link = "inter_host";
  across.busbw_gbps = 1.25;
  store.add_comm_stats(4, std::vector{across});
  const auto both = store.comm_stats(4);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].link, "intra_host");
  EXPECT_EQ(both[1], across);
  // Trials keep their rows through the rebuild, and a lost host can be stored.
  const int64_t sweep = store.create_sweep({});
  TrialRow t;
  t.sweep_id = sweep;
  t.key = "mbs=1";
  t.status = TrialStatus::node_failure;
  t.reason = "a host was lost";
  t.run_id = 4;
  store.upsert_trial(t);
  EXPECT_EQ(store.find_trial(sweep, "mbs=1")->status, TrialStatus::node_failure);
  EXPECT_EQ(query_sql(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'trials_by_run'"), "1");
  EXPECT_THROW(exec_sql(db,
                        "INSERT INTO comm_stats (run_id, rank, op, bytes, link, count, "
                        "total_ns, min_ns, max_ns, algbw_gbps, busbw_gbps) VALUES "
                        "(4, 0, 'all_reduce', 8, 'pcie', 1, 1, 1, 1, 1, 1)"),
               std::exception);
}

// v6 -> v7 on a file a v6 build wrote: its probe keeps every value, and its
// samples and GEMM rate read back with 0 ranks (the probe's world size), which
// the cost model reads as such; new probes keep their ranks.
TEST(StoreSchema, V6ProbesMigrateToV7WithRanksUnknown) {
  TempDir dir;
  const auto db = old_store(
      dir, 6,
      "INSERT INTO probes VALUES (3, 1700000000.0, 'node-a', 'cpu | gemm fp32', 4, 2.5e10);"
      "INSERT INTO probe_bandwidth VALUES (3, 'all_reduce', 4096, 'inter_host', 0.5, 0.75);");
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 6);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto old = store.latest_probe("node-a");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->world_size, 4);
  EXPECT_EQ(old->gemm_flops_per_s, 2.5e10);
  EXPECT_EQ(old->gemm_ranks, 0);
  EXPECT_EQ(old->host_cpus, 0);
  ASSERT_EQ(old->bandwidth.size(), 1u);
  EXPECT_EQ(old->bandwidth[0], (BandwidthSample{"all_reduce", 4096, 0.5, 0.75, "inter_host", 0}));

  ProbeResult p = *old;
  p.gemm_ranks = 2;
  p.host_cpus = 16;
  p.bandwidth[0].ranks = 2;
  p.id = store.add_probe(p);
  const auto now = store.latest_probe("node-a");
  EXPECT_EQ(now->gemm_ranks, 2);
  EXPECT_EQ(now->host_cpus, 16);
  EXPECT_EQ(now->bandwidth.at(0).ranks, 2);
  EXPECT_THROW(exec_sql(db, "UPDATE probe_bandwidth SET ranks = -1"), std::exception);
}

// v7 -> v8 on a file a v7 build wrote, holding a run: its collective statistics
// read back as the world group's, its ranks at stage 0 and its steps without a
// bubble; a pipeline run's rows then keep their groups (a pp send and a world
// send of one size are two rows), stages and bubbles; an empty group is refused.
TEST(StoreSchema, V7RunMigratesToV8CommStatsOfTheWorldGroupNoBubble) {
  TempDir dir;
  const auto db = old_store(
      dir, 7,
      run_4_of_two_ranks("v7 run", "ok") +
          "INSERT INTO step_ranks VALUES (4, 1, 1, 9.5, 2.0, 0.5);"
          "INSERT INTO comm_stats (run_id, rank, op, bytes, link, count, total_ns, min_ns, "
          "max_ns, algbw_gbps, busbw_gbps) VALUES "
          "(4, 1, 'all_reduce', 4096, 'inter_host', 3, 300, 90, 110, 1.5, 2.25);");
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 7);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto comm = store.comm_stats(4);
  ASSERT_EQ(comm.size(), 1u);
  EXPECT_EQ(comm[0], (CommStatRow{1, "all_reduce", 4096, 3, 300, 90, 110, 1.5, 2.25, "inter_host",
                                  "world"}));
  const auto ranks = store.ranks(4);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].pipeline_stage, 0);
  EXPECT_EQ(ranks[0].host, "node-a");
  const auto steps = store.step_ranks(4);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0], (StepRankRow{1, 1, 9.5, 2.0, 0.5, 0.0}));

  const std::vector<CommStatRow> rows = {
      {0, "send", 2048, 4, 400, 90, 120, 1.0, 1.0, "intra_host", "pp"},
      {0, "send", 2048, 1, 100, 100, 100, 1.0, 1.0, "intra_host", "world"}};
  store.add_comm_stats(4, rows);
  const std::vector<StepRankRow> bubble = {{2, 0, 8.0, 3.0, 1.0, 2.5}};
  store.add_step_ranks(4, bubble);
  RankInfo stage1;
  stage1.rank = 0;
  stage1.pipeline_stage = 1;
  store.register_rank(4, stage1);
  const auto after = store.comm_stats(4);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].op, "all_reduce");  // by op, then group: pp before world
  EXPECT_EQ(after[1], rows[0]);
  EXPECT_EQ(after[2], rows[1]);
  EXPECT_EQ(store.step_ranks(4).at(1).bubble_ms, 2.5);  // by step: the old row first
  EXPECT_EQ(store.ranks(4).at(0).pipeline_stage, 1);
  EXPECT_THROW(exec_sql(db, "UPDATE comm_stats SET \"group\" = ''"), std::exception);
  EXPECT_THROW(exec_sql(db, "UPDATE run_ranks SET pipeline_stage = -1"), std::exception);
}

// v8 -> v9 rebuilds `runs` so that its status may be `diverged`: every row that
// points at a run (its ranks, steps and comm stats, a trial) stays, as the
// rebuild runs with foreign keys off; they are back on after it.
TEST(StoreSchema, V8RunsMigrateToV9WithEveryRowPointingAtThemAndTakeStatusDiverged) {
  TempDir dir;
  const auto db = old_store(
      dir, 8,
      run_4_of_two_ranks("v8 run", "killed") +
          "INSERT INTO steps VALUES (4, 0, 10.5, 0.001, 1.0, 0, 2.0, 100.0, 5000.0, 1e12);"
          "INSERT INTO sweeps (id, name, metric, status, created_at) "
          "VALUES (2, 'sweep', 'latency_ms', 'done', 1700000000.0);"
          "INSERT INTO trials (sweep_id, key, status, run_id, created_at, updated_at) "
          "VALUES (2, 'mbs=1', 'ok', 4, 1700000000.0, 1700000002.0);");
  EXPECT_THROW(exec_sql(db, "UPDATE runs SET status = 'diverged'"), std::exception);
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 8);
  EXPECT_EQ(store.integrity_check(), "ok");
  EXPECT_EQ(store.get_run(4).status, RunStatus::killed);
  EXPECT_EQ(store.ranks(4).size(), 1u);
  EXPECT_EQ(store.steps(4).size(), 1u);
  EXPECT_EQ(store.find_trial(2, "mbs=1")->run_id, 4);

  const int64_t id = store.create_run({});
  store.finish_run(id, RunStatus::diverged, "training diverged");
  EXPECT_EQ(store.get_run(id).status, RunStatus::diverged);
  EXPECT_EQ(store.get_run(id).error, "training diverged");
  EXPECT_THROW(exec_sql(db, "UPDATE runs SET status = 'exploded'"), std::exception);
  // Trials too: the v8 trial kept its row and run, and may be diverged now.
  EXPECT_NO_THROW(exec_sql(db, "UPDATE trials SET status = 'diverged' WHERE key = 'mbs=1'"));
  EXPECT_EQ(store.find_trial(2, "mbs=1")->status, profiler::TrialStatus::diverged);
  EXPECT_EQ(store.find_trial(2, "mbs=1")->run_id, 4);
  EXPECT_THROW(exec_sql(db, "UPDATE trials SET status = 'exploded'"), std::exception);
  // Foreign keys are on again: a step of a run that does not exist is refused.
  EXPECT_THROW(store.add_steps(999, store.steps(4)), std::exception);
}

// v9 -> v10 adds the generations table: a v9 file's runs (a training run with
// its steps, a trial pointing at it) keep every row, and a generation row can
// then be stored under an old run and read back; the table's CHECKs hold.
TEST(StoreSchema, V9RunsMigrateToV10AndTakeGenerationRows) {
  TempDir dir;
  const auto db = old_store(
      dir, 9,
      run_4_of_two_ranks("v9 run", "diverged") +
          "INSERT INTO steps VALUES (4, 0, 10.5, 0.001, 1.0, 0, 2.0, 100.0, 5000.0, 1e12);"
          "INSERT INTO sweeps (id, name, metric, status, created_at) "
          "VALUES (2, 'sweep', 'latency_ms', 'done', 1700000000.0);"
          "INSERT INTO trials (sweep_id, key, status, run_id, created_at, updated_at) "
          "VALUES (2, 'mbs=1', 'diverged', 4, 1700000000.0, 1700000002.0);");
  EXPECT_EQ(query_sql(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'generations'"), "0");
  RunStore store(db);
  EXPECT_EQ(store.opened_schema_version(), 9);
  EXPECT_EQ(store.integrity_check(), "ok");
  EXPECT_EQ(store.get_run(4).status, RunStatus::diverged);
  EXPECT_EQ(store.get_run(4).name, "v9 run");
  EXPECT_EQ(store.ranks(4).size(), 1u);
  ASSERT_EQ(store.steps(4).size(), 1u);
  EXPECT_EQ(store.steps(4)[0].loss, 10.5);
  EXPECT_EQ(store.find_trial(2, "mbs=1")->run_id, 4);
  EXPECT_TRUE(store.generations().empty());

  GenerationRow row;
  row.kind = GenerationKind::rollout;
  row.model = "gpt2 124.44 M";
  row.dtype = "bf16";
  row.batch = 8;
  row.prompts = 8;
  row.prompt_tokens = 64;
  row.new_tokens = 512;
  row.tpot_ms = LatencyPercentiles{20.0, 25.0, 31.0};
  row.tokens_per_s = 390.5;
  row.e2e_ms = 2000;
  row.step = 3;
  row.id = store.add_generation(4, row);
  row.run_id = 4;
  const auto got = store.generations(4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], row);
  EXPECT_THROW(exec_sql(db, "UPDATE generations SET kind = 'train'"), std::exception);
  EXPECT_THROW(exec_sql(db, "UPDATE generations SET batch = 0"), std::exception);
  EXPECT_THROW(exec_sql(db, "UPDATE generations SET test = 'pp512'"), std::exception);
  EXPECT_EQ(store.generations(4).at(0), row);
}

TEST(StoreSchema, ReadOnlyRefusesAnOlderVersionInsteadOfMigrating) {
  TempDir dir;
  const auto db = dir / "old.db";
  exec_sql(db, test::read_file(fixture(1)));
  const std::string msg = error_of([&] { RunStore store(db, OpenMode::read_only); });
  EXPECT_NE(msg.find("database " + db + " has schema version 1, older than this build (" +
                     std::to_string(RunStore::schema_version()) + ")"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("hybrid-prof migrate --db " + db), std::string::npos) << msg;
  EXPECT_EQ(query_sql(db, "PRAGMA user_version"), "1");
  EXPECT_EQ(query_sql(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'sweeps'"), "0");
}

TEST(StoreSchema, NewerVersionIsRefusedInBothModes) {
  TempDir dir;
  const auto db = dir / "new.db";
  { RunStore store(db); }
  const int newer = RunStore::schema_version() + 1;
  exec_sql(db, "PRAGMA user_version = " + std::to_string(newer));
  const std::string expected = "database " + db + " has schema version " + std::to_string(newer) +
                               ", newer than this build supports (" +
                               std::to_string(RunStore::schema_version()) + "); upgrade hybrid";
  EXPECT_EQ(error_of([&] { RunStore store(db); }), expected);
  EXPECT_EQ(error_of([&] { RunStore store(db, OpenMode::read_only); }), expected);
  EXPECT_EQ(query_sql(db, "PRAGMA user_version"), std::to_string(newer));  // left alone
}

TEST(StoreSchema, NonSqliteFileIsRefusedAndLeftAlone) {
  TempDir dir;
  const auto path = dir / "notes.db";
  std::string content;
  for (int i = 0; i < 200; ++i) content += "this is a text file, not a database\n";
  std::ofstream(path) << content;
  for (OpenMode mode : {OpenMode::read_write, OpenMode::read_only}) {
    const std::string msg = error_of([&] { RunStore store(path, mode); });
    EXPECT_NE(msg.find("database " + path + " is not a SQLite database"), std::string::npos) << msg;
  }
  EXPECT_EQ(test::read_file(path), content);
}

TEST(StoreSchema, ForeignSqliteDatabaseIsRefused) {
  TempDir dir;
  const auto other = dir / "other.db";
  exec_sql(other, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
  const std::string msg = error_of([&] { RunStore store(other); });
  EXPECT_NE(msg.find("is not a hybrid run store"), std::string::npos) << msg;
  EXPECT_EQ(query_sql(other, "SELECT count(*) FROM sqlite_schema"), "1");  // nothing added

  const auto app = dir / "app.db";
  exec_sql(app, "PRAGMA application_id = 42");
  const std::string app_msg = error_of([&] { RunStore store(app); });
  EXPECT_NE(app_msg.find("is not a hybrid run store (application_id 0x2a)"), std::string::npos)
      << app_msg;
}

TEST(StoreSchema, ReadOnlyNeedsAnExistingRunStore) {
  TempDir dir;
  const auto missing = dir / "missing.db";
  const std::string msg = error_of([&] { RunStore store(missing, OpenMode::read_only); });
  EXPECT_NE(msg.find("database " + missing + " does not exist"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(missing));

  const auto empty = dir / "empty.db";
  std::ofstream(empty).close();  // zero bytes: a valid, empty SQLite file
  const std::string empty_msg = error_of([&] { RunStore store(empty, OpenMode::read_only); });
  EXPECT_NE(empty_msg.find("is empty: no hybrid run store"), std::string::npos) << empty_msg;

  const std::string dir_msg = error_of([&] { RunStore store(dir.path(), OpenMode::read_write); });
  EXPECT_NE(dir_msg.find("is a directory"), std::string::npos) << dir_msg;
}

TEST(StoreSchema, ReadOnlyModeNeverWrites) {
  TempDir dir;
  const auto db = dir / "ro.db";
  int64_t run = 0, sweep = 0;
  {
    RunStore store(db);
    run = store.create_run({});
    sweep = store.create_sweep({});
  }
  const std::string before = query_sql(db, "SELECT id, status, last_update FROM runs");
  RunStore ro(db, OpenMode::read_only);
  EXPECT_TRUE(ro.read_only());
  const std::vector<std::function<void()>> writes = {
      [&] { ro.create_run({}); },          [&] { ro.finish_run(run, RunStatus::ok); },
      [&] { ro.heartbeat(run); },          [&] { ro.add_steps(run, std::vector<StepRow>{{}}); },
      [&] { ro.add_events(run, {}, {}); }, [&] { ro.mark_stale_runs(); },
      [&] { ro.create_sweep({}); },        [&] { ro.set_sweep_status(sweep, SweepStatus::done); },
      [&] { ro.add_probe({}); },
  };
  for (size_t i = 0; i < writes.size(); ++i) {
    const std::string msg = error_of(writes[i]);
    EXPECT_NE(msg.find("is open read-only"), std::string::npos) << "write #" << i << ": " << msg;
  }
  EXPECT_EQ(query_sql(db, "SELECT id, status, last_update FROM runs"), before);
  EXPECT_EQ(query_sql(db, "SELECT count(*) FROM steps"), "0");
  EXPECT_EQ(ro.list_runs().size(), 1u);
}

TEST(StoreSchema, ReadOnlyReaderSeesLaterCommits) {
  TempDir dir;
  const auto db = dir / "live.db";
  RunStore writer(db);
  const int64_t run = writer.create_run({});
  RunStore viewer(db, OpenMode::read_only);
  EXPECT_EQ(viewer.list_runs().size(), 1u);
  EXPECT_EQ(viewer.steps(run).size(), 0u);
  writer.create_run({});
  writer.add_steps(run, std::vector<StepRow>{{0, 1, 1, 1, false, 1, 1, 1, 1}});
  EXPECT_EQ(viewer.list_runs().size(), 2u);  // a refresh is just another read
  EXPECT_EQ(viewer.steps(run).size(), 1u);
}

TEST(StoreSchema, ConcurrentFirstOpensCreateTheSchemaOnce) {
  TempDir dir;
  const auto db = dir / "race.db";
  constexpr int kProcs = 4;
  std::vector<pid_t> kids;
  for (int i = 0; i < kProcs; ++i)
    kids.push_back(test::fork_child([&] {
      RunStore store(db);
      RunInfo r;
      r.name = "proc " + std::to_string(i);
      return store.create_run(r) > 0;
    }));
  for (pid_t k : kids) EXPECT_EQ(test::wait_child(k), 0);
  RunStore store(db, OpenMode::read_only);
  EXPECT_EQ(store.list_runs().size(), size_t(kProcs));
  EXPECT_EQ(query_sql(db, "PRAGMA user_version"), std::to_string(RunStore::schema_version()));
  EXPECT_EQ(store.integrity_check(), "ok");
}

}  // namespace
}  // namespace hybrid::profiler
