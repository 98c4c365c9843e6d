// Every table of the run store: what is written reads back field for field, from
// a real SQLite file, through a second connection.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "profiler/store/run_store.h"
#include "store_test_util.h"
#include "tests/profiler/full_rows.h"

namespace hybrid::profiler {
namespace {

using test::TempDir;

RunInfo sample_run() {
  RunInfo r;
  r.name = "gpt2-tiny zero2";
  r.config_json = R"({"train_micro_batch_size_per_gpu": 4})";
  r.host = "node-a";
  r.device = "AMD EPYC (2 cores)";
  r.backend = "cpu";
  r.world_size = 4;
  r.dtype = "bf16";
  r.zero_stage = 2;
  r.micro_batch = 4;
  r.grad_accum = 2;
  r.seq_len = 128;
  r.n_params = 3'000'000'000ull;  // beyond 32 bits
  r.git_revision = "abc1234";
  r.hybrid_version = "0.1.0";
  r.started_at = 1.7e9 + 0.25;
  return r;
}

TEST(RunStore, RunRoundTripAndLifecycle) {
  TempDir dir;
  const auto db = dir / "hybrid.db";
  int64_t id = 0;
  {
    RunStore store(db);
    id = store.create_run(sample_run());
    EXPECT_GT(id, 0);
  }
  RunStore store(db);
  RunInfo got = store.get_run(id);
  RunInfo want = sample_run();
  want.id = id;
  want.writer_pid = int64_t(getpid());
  want.writer_host = got.writer_host;
  want.last_update = got.last_update;
  EXPECT_EQ(got, want);
  EXPECT_FALSE(got.writer_host.empty());
  EXPECT_EQ(got.status, RunStatus::running);
  EXPECT_FALSE(got.finished_at.has_value());

  RunInfo changed = got;
  changed.n_params = 124'439'808;
  changed.summary_json = R"({"note": "model built"})";
  store.update_run(changed);
  EXPECT_EQ(store.get_run(id).n_params, 124'439'808u);
  EXPECT_EQ(store.get_run(id).status, RunStatus::running);  // update does not touch status

  store.finish_run(id, RunStatus::oom, "out of memory: activations 9 GiB > budget 8 GiB",
                   R"({"status": "oom"})");
  got = store.get_run(id);
  EXPECT_EQ(got.status, RunStatus::oom);
  EXPECT_EQ(got.error, "out of memory: activations 9 GiB > budget 8 GiB");
  EXPECT_EQ(got.summary_json, R"({"status": "oom"})");
  ASSERT_TRUE(got.finished_at.has_value());
  EXPECT_GE(*got.finished_at, got.started_at);
  EXPECT_THROW(store.finish_run(id, RunStatus::running), std::invalid_argument);

  // Defaults (an empty error view may carry a null pointer) store '' and '{}', not NULL.
  const int64_t plain = store.create_run({});
  store.finish_run(plain, RunStatus::ok);
  EXPECT_EQ(store.get_run(plain).error, "");
  EXPECT_EQ(store.get_run(plain).summary_json, "{}");

  EXPECT_FALSE(store.find_run(id + 100).has_value());
  try {
    store.get_run(id + 100);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("run " + std::to_string(id + 100) + " not found"),
              std::string::npos)
        << e.what();
  }
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, id);
  EXPECT_EQ(runs[1].id, plain);
}

TEST(RunStore, HeartbeatAdvancesLastUpdate) {
  TempDir dir;
  RunStore store(dir / "h.db");
  const int64_t id = store.create_run(sample_run());
  const double first = store.get_run(id).last_update;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  store.heartbeat(id);
  EXPECT_GT(store.get_run(id).last_update, first);
  EXPECT_THROW(store.heartbeat(id + 1), StoreError);  // no such run
}

TEST(RunStore, RunTablesRoundTrip) {
  TempDir dir;
  const auto db = dir / "t.db";
  const double nan = std::nan("");
  const std::vector<StepRow> steps = {
      {0, 10.5, 1e-4, 65536, false, 2.5, 120.25, 8192.5, 1.5e12},
      {1, nan, 2e-4, 32768, true, nan, 80.0, 0.0, 0.0},  // overflowed fp16 step
      {2, 9.75, 3e-4, 32768, false, 1.25, 119.0, 8300.0, 1.6e12}};
  const std::vector<StepRankRow> step_ranks = {
      {0, 0, 100.5, 30.25, 5.5}, {0, 1, 101.0, 31.0, 6.0}, {1, 0, 70.0, 20.0, 2.0}};
  // Written out of order, and rewritten once (the same key replaces the row).
  const std::vector<StepTimerRow> step_timers = {{1, 0, "forward", 3.5},
                                                 {0, 1, "step", 0.25},
                                                 {0, 0, "forward", 1.125},
                                                 {0, 0, "backward", 2.0}};
  const std::vector<ModuleInfo> modules = {{0, -1, "model", "GPT2", 0, 0, 1 << 20},
                                           {1, 0, "wte", "Embedding", 1, 524288, 0},
                                           {2, 0, "h.0", "Block", 1, 0, 65536},
                                           {3, 2, "h.0.attn", "Attention", 2, 16640, 32768}};
  const std::vector<LayerStat> layers = {
      // host times and recomputation (activation checkpointing) round-trip too
      {0, 3, 2, 1500, 3100, 1'000'000'000'000ull, 2'000'000'000'000ull, 500'000'000'000ull,
       1'000'000'000'000ull, 2, 1400, 3000, 900, 600'000'000'000ull, 850},
      {1, 3, 2, 1600, 3200, 1'000'000'000'000ull, 2'000'000'000'000ull, 500'000'000'000ull,
       1'000'000'000'000ull, 2},
      {0, 1, 2, 50, 70, 0, 0, 0, 0, 2}};
  const std::vector<CommStatRow> comm = {
      {0, "all_reduce", 1 << 20, 12, 3'000'000, 200'000, 400'000, 4.25, 6.375},
      {1, "all_reduce", 1 << 20, 12, 3'100'000, 210'000, 410'000, 4.0, 6.0},
      {0, "all_gather", 4096, 3, 30'000, 9'000, 11'000, 0.5, 0.375}};
  const std::vector<MemoryRow> memory = {{0, "params", 1ull << 31, 1ull << 31, 1ull << 31},
                                         {0, "activations", 1000, 5'000'000'000ull, std::nullopt},
                                         {1, "params", 1ull << 31, 1ull << 31, 1ull << 31}};
  int64_t id = 0;
  {
    RunStore store(db);
    id = store.create_run(sample_run());
    store.register_rank(id, 0, 1'700'000'000'000'000'000);
    store.register_rank(id, 1, 1'700'000'000'000'500'000);
    store.add_steps(id, steps);
    store.add_step_ranks(id, step_ranks);
    store.add_step_timers(id, step_timers);
    store.add_step_timers(id, std::vector<StepTimerRow>{{0, 0, "backward", 2.5}});
    store.add_modules(id, modules);
    store.add_layer_stats(id, layers);
    store.add_comm_stats(id, comm);
    store.add_memory(id, memory);
  }
  RunStore store(db, OpenMode::read_only);

  const auto ranks = store.ranks(id);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[1].rank, 1);
  EXPECT_EQ(ranks[1].epoch_unix_ns, 1'700'000'000'000'500'000);
  EXPECT_EQ(ranks[1].pid, int64_t(getpid()));
  EXPECT_FALSE(ranks[1].host.empty());

  const auto got_steps = store.steps(id);
  ASSERT_EQ(got_steps.size(), 3u);
  EXPECT_EQ(got_steps[0], steps[0]);
  EXPECT_EQ(got_steps[2], steps[2]);
  // NaN is stored as NULL by SQLite and must come back as NaN, not 0.
  EXPECT_TRUE(std::isnan(got_steps[1].loss));
  EXPECT_TRUE(std::isnan(got_steps[1].grad_norm));
  EXPECT_TRUE(got_steps[1].skipped);
  EXPECT_EQ(got_steps[1].loss_scale, 32768);

  EXPECT_EQ(store.step_ranks(id), step_ranks);  // sorted by (step, rank) already
  // step_timers sorted by (step, rank, name); the rewritten row holds its new value.
  const std::vector<StepTimerRow> timers_sorted = {
      {0, 0, "backward", 2.5}, step_timers[2], step_timers[1], step_timers[0]};
  EXPECT_EQ(store.step_timers(id), timers_sorted);
  EXPECT_EQ(store.modules(id), modules);
  // layer_stats come sorted by (step, rank, module).
  const std::vector<LayerStat> layers_sorted = {layers[2], layers[0], layers[1]};
  EXPECT_EQ(store.layer_stats(id), layers_sorted);
  EXPECT_EQ(store.layer_stats(id, 1), std::vector<LayerStat>{layers[1]});
  // comm sorted by (op, bytes, rank).
  EXPECT_EQ(store.comm_stats(id), (std::vector<CommStatRow>{comm[2], comm[0], comm[1]}));
  // memory sorted by (rank, category).
  EXPECT_EQ(store.memory(id), (std::vector<MemoryRow>{memory[1], memory[0], memory[2]}));

  const RunProfile p = store.load_profile(id);
  EXPECT_EQ(p.run.id, id);
  EXPECT_EQ(p.ranks, ranks);
  EXPECT_EQ(p.step_ranks, step_ranks);
  EXPECT_EQ(p.step_timers, timers_sorted);
  EXPECT_EQ(p.modules, modules);
  EXPECT_EQ(p.layers, layers_sorted);
  EXPECT_EQ(p.comm.size(), 3u);
  EXPECT_EQ(p.memory.size(), 3u);
  EXPECT_THROW(store.load_profile(id + 1), StoreError);
}

TEST(RunStore, UnixNsOfASteadyTimePoint) {
  // Bracketed by clock reads around the call instead of a tolerance: unix_ns_of
  // returns S − (T − past), with S its system read and T its steady read. S lies
  // between the system reads before and after the call, and T − (past + 2 s) between
  // 0 and the steady time the bracket took, so the result lies in
  // [before − 2 s − bracket, after − 2 s] (1 us for the ns conversions).
  using namespace std::chrono;
  const auto steady0 = steady_clock::now();
  const auto past = steady0 - seconds(2);
  const auto before = system_clock::now();
  const int64_t v = unix_ns_of(past);
  const auto after = system_clock::now();
  const auto bracket = steady_clock::now() - steady0;
  const auto ns = [](auto d) { return duration_cast<nanoseconds>(d).count(); };
  const int64_t slack = 1000;
  EXPECT_GE(v, ns(before.time_since_epoch() - seconds(2) - bracket) - slack);
  EXPECT_LE(v, ns(after.time_since_epoch() - seconds(2)) + slack);
}

TEST(RunStore, RewrittenRowsReplaceByKey) {
  TempDir dir;
  RunStore store(dir / "r.db");
  const int64_t id = store.create_run(sample_run());
  store.add_steps(id, std::vector<StepRow>{{5, 3.0, 1e-3, 1, false, 1.0, 10, 100, 1e9}});
  store.add_steps(id, std::vector<StepRow>{{5, 2.0, 1e-3, 1, false, 1.0, 11, 100, 1e9}});
  const auto steps = store.steps(id);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].loss, 2.0);
}

// Point-to-point stats are stored by name like the collectives; a pipeline stage
// sending one size to a neighbour on its host and one on another host keeps both.
TEST(RunStore, PointToPointStatsKeepOneRowPerLink) {
  TempDir dir;
  RunStore store(dir / "p.db");
  const int64_t id = store.create_run(sample_run());
  const std::vector<CommStatRow> rows = {
      {0, "send", 1 << 20, 8, 800'000, 90'000, 120'000, 11.5, 11.5, "intra_host"},
      {0, "send", 1 << 20, 8, 8'000'000, 900'000, 1'200'000, 1.25, 1.25, "inter_host"},
      {0, "recv", 1 << 20, 8, 810'000, 91'000, 121'000, 11.0, 11.0, "intra_host"}};
  store.add_comm_stats(id, rows);
  // By op, then intra- before inter-host (link DESC).
  EXPECT_EQ(store.comm_stats(id), (std::vector<CommStatRow>{rows[2], rows[0], rows[1]}));
}

TEST(RunStore, WritesToMissingRunFailWithItsId) {
  TempDir dir;
  RunStore store(dir / "m.db");
  try {
    store.add_steps(42, std::vector<StepRow>{{0, 1, 1, 1, false, 1, 1, 1, 1}});
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("run 42"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::query_sql(dir / "m.db", "SELECT count(*) FROM steps"), "0");
}

TEST(RunStore, EventsRoundTripWithNamesAndFilters) {
  TempDir dir;
  const auto db = dir / "e.db";
  // Two ranks' tracers with their own name tables (the same name has different ids).
  const std::vector<std::string> names0 = {"forward h.0", "all_reduce", "unused"};
  const std::vector<std::string> names1 = {"all_reduce", "forward h.0"};
  std::vector<Event> ev0, ev1;
  for (int i = 0; i < 300; ++i) {
    Event e;
    e.start_ns = 1000 * i;
    e.dur_ns = 500 + i;
    e.bytes = uint64_t(i) * 4096;
    e.flops = uint64_t(i) * 1'000'000'000'000ull;
    e.name_id = uint32_t(i % 2);
    e.step = i / 100;
    e.module_id = i % 2 ? -1 : 3;
    e.rank = 0;
    e.lane = i % 2 ? kLaneComm : kLaneCompute;
    e.category = i % 2 ? Category::comm : Category::forward;
    ev0.push_back(e);
    e.rank = 1;
    e.name_id = 1 - e.name_id;  // the same names under rank 1's ids
    e.start_ns += 7;
    ev1.push_back(e);
  }
  int64_t id = 0;
  {
    RunStore store(db);
    id = store.create_run(sample_run());
    store.add_events(id, ev0, names0);
    store.add_events(id, ev1, names1);
    // Names are interned once across ranks; "unused" was not stored.
    EXPECT_EQ(test::query_sql(db, "SELECT count(*) FROM event_names"), "2");
    // Invalid name ids are refused before anything is written.
    std::vector<Event> bad = {ev0[0]};
    bad[0].name_id = 7;
    EXPECT_THROW(store.add_events(id, bad, names0), std::invalid_argument);
    EXPECT_EQ(store.event_count(id), 600);
  }
  RunStore store(db, OpenMode::read_only);
  const EventSet all = store.events(id);
  ASSERT_EQ(all.events.size(), 600u);
  for (size_t i = 0; i < 300; ++i) {  // rank 0 first, by start time
    const Event& e = all.events[i];
    const Event& w = ev0[i];
    test::expect_event_fields(e, w, i);  // rank 0's
    EXPECT_EQ(all.names.at(e.name_id), names0[w.name_id]);
  }
  for (size_t i = 0; i < 300; ++i) {
    const Event& e = all.events[300 + i];
    EXPECT_EQ(e.rank, 1);
    EXPECT_EQ(e.start_ns, ev1[i].start_ns);
    EXPECT_EQ(all.names.at(e.name_id), names1[ev1[i].name_id]);
  }
  EXPECT_EQ(all.names.size(), 2u);

  const EventSet r1s1 = store.events(id, {.rank = 1, .step_min = 1, .step_max = 1});
  ASSERT_EQ(r1s1.events.size(), 100u);
  for (const Event& e : r1s1.events) {
    EXPECT_EQ(e.rank, 1);
    EXPECT_EQ(e.step, 1);
  }
  EventFilter from_step2;
  from_step2.step_min = 2;
  EXPECT_EQ(store.events(id, from_step2).events.size(), 200u);
  EventFilter rank5;
  rank5.rank = 5;
  EXPECT_EQ(store.events(id, rank5).events.size(), 0u);
}

TEST(RunStore, SweepsTrialsPrunedAndProbesRoundTrip) {
  TempDir dir;
  const auto db = dir / "s.db";
  RunStore store(db);
  const int64_t run = store.create_run(sample_run());
  SweepInfo sweep;
  sweep.name = "first cluster";
  sweep.base_config_json = R"({"zero_optimization": {"stage": 2}})";
  sweep.space_json = R"({"train_micro_batch_size_per_gpu": [1, 2, 4]})";
  sweep.strategy = "grid";
  sweep.metric = "tokens_per_s";
  const int64_t sid = store.create_sweep(sweep);
  {
    SweepInfo got = store.get_sweep(sid);
    EXPECT_EQ(got.name, sweep.name);
    EXPECT_EQ(got.space_json, sweep.space_json);
    EXPECT_EQ(got.status, SweepStatus::running);
    EXPECT_GT(got.created_at, 1e9);
    EXPECT_FALSE(got.finished_at.has_value());
  }

  TrialRow t;
  t.sweep_id = sid;
  t.key = "mb=4,zero=2";
  t.config_json = R"({"train_micro_batch_size_per_gpu": 4})";
  t.status = TrialStatus::pending;
  t.predicted_mem_bytes = 6'000'000'000ull;
  t.predicted_step_ms = 120.5;
  const int64_t tid = store.upsert_trial(t);
  TrialRow got = *store.find_trial(sid, t.key);
  EXPECT_EQ(got.id, tid);
  EXPECT_EQ(got.status, TrialStatus::pending);
  EXPECT_FALSE(got.metric.has_value());
  EXPECT_FALSE(got.run_id.has_value());
  EXPECT_EQ(got.predicted_mem_bytes, 6'000'000'000ull);

  // The same key updates the row in place: same id, new values.
  t.status = TrialStatus::ok;
  t.reason = "measured 5 steps";
  t.metric = 8123.5;
  t.tokens_per_s = 8123.5;
  t.samples_per_s = 63.46;
  t.flops_per_s = 2.5e12;
  t.latency_ms = 126.0;
  t.peak_mem_bytes = 5'500'000'000ull;
  t.wall_s = 31.5;
  t.output_tail = "step 5 loss 9.1\n";
  t.run_id = run;
  t.spread = StepSpread{13, 126.0, 124.5, 128.0, 1.5, 0.02, 123.0, 129.5};
  t.noisy = true;
  t.attempts = 2;
  EXPECT_EQ(store.upsert_trial(t), tid);
  got = *store.find_trial(sid, t.key);
  TrialRow want = t;
  want.id = tid;
  want.created_at = got.created_at;
  want.updated_at = got.updated_at;
  EXPECT_EQ(got, want);
  EXPECT_GE(got.updated_at, got.created_at);

  TrialRow crash;
  crash.sweep_id = sid;
  crash.key = "mb=8,zero=2";
  crash.status = TrialStatus::crash;
  crash.reason = "signal 11";
  store.upsert_trial(crash);
  const auto trials = store.trials(sid);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[1].status, TrialStatus::crash);
  EXPECT_FALSE(store.find_trial(sid, "mb=1").has_value());
  TrialRow nokey;
  nokey.sweep_id = sid;
  EXPECT_THROW(store.upsert_trial(nokey), std::invalid_argument);

  const std::vector<PrunedCandidate> pruned = {
      {"mb=64,zero=0", "{}", 90'000'000'000ull, 80'000'000'000ull, "predicted 90 GB > 80 GB"},
      {"mb=32,zero=0", "{}", 85'000'000'000ull, 80'000'000'000ull, "predicted 85 GB > 80 GB"}};
  store.add_pruned(sid, pruned);
  EXPECT_EQ(store.pruned(sid), (std::vector<PrunedCandidate>{pruned[1], pruned[0]}));  // by key

  store.set_sweep_status(sid, SweepStatus::done);
  EXPECT_EQ(store.get_sweep(sid).status, SweepStatus::done);
  EXPECT_TRUE(store.get_sweep(sid).finished_at.has_value());
  EXPECT_EQ(store.sweeps().size(), 1u);
  EXPECT_THROW(store.set_sweep_status(sid + 9, SweepStatus::done), StoreError);

  EXPECT_FALSE(store.latest_probe().has_value());
  ProbeResult a;
  a.host = "node-a";
  a.device = "cpu";
  a.world_size = 2;
  a.gemm_flops_per_s = 3.5e11;
  a.gemm_ranks = 2;
  a.host_cpus = 8;
  a.bandwidth = {{"all_reduce", 1 << 20, 5.0, 5.0, "intra_host", 2},
                 {"all_gather", 1 << 20, 4.0, 2.0, "intra_host", 2}};
  ProbeResult b = a;
  b.host = "node-b";
  b.gemm_flops_per_s = 9.9e14;
  b.bandwidth = {{"all_reduce", 1 << 30, 150.0, 262.5}};
  const int64_t pa = store.add_probe(a);
  const int64_t pb = store.add_probe(b);
  auto latest = store.latest_probe();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->id, pb);
  auto of_a = store.latest_probe("node-a");
  ASSERT_TRUE(of_a.has_value());
  ProbeResult want_a = a;
  want_a.id = pa;
  want_a.created_at = of_a->created_at;
  std::swap(want_a.bandwidth[0], want_a.bandwidth[1]);  // by (op, bytes)
  EXPECT_EQ(*of_a, want_a);
  EXPECT_FALSE(store.latest_probe("node-z").has_value());
}

TEST(RunStore, TrialRunLinkSurvivesAsNullWhenRunIsDeleted) {
  TempDir dir;
  const auto db = dir / "fk.db";
  int64_t sid = 0;
  {
    RunStore store(db);
    const int64_t run = store.create_run(sample_run());
    store.add_steps(run, std::vector<StepRow>{{0, 1, 1, 1, false, 1, 1, 1, 1}});
    sid = store.create_sweep({});
    TrialRow t;
    t.sweep_id = sid;
    t.key = "k";
    t.run_id = run;
    store.upsert_trial(t);
  }
  // Foreign keys as declared: deleting the run cascades to its rows and unlinks trials.
  test::exec_sql(db, "PRAGMA foreign_keys = ON; DELETE FROM runs;");
  RunStore store(db);
  EXPECT_EQ(test::query_sql(db, "SELECT count(*) FROM steps"), "0");
  EXPECT_FALSE(store.find_trial(sid, "k")->run_id.has_value());
}

}  // namespace
}  // namespace hybrid::profiler
