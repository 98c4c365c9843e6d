// The profiler wired into training: FLOPs counted per module against the
// closed form, shared weights counted once, and the run store under real
// `mpirun` ranks (concurrent writers and a reader, a killed run, overlap shown
// as exposed < total communication, a trace Perfetto can open).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "profiler/flops.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

using profiler::Category;

using test::quiet;

TEST(Profiling, CountedStepFlopsMatchTheClosedForm) {
  // Matmuls dominate at this width, as in real GPT-2s; the elementwise ops the
  // per-op count adds (layernorm, GELU, softmax, AdamW is not in fwd/bwd) stay under 1 %.
  auto cfg = test::tiny_config({{"train_micro_batch_size_per_gpu", 2},
                                {"hybrid",
                                 {{"model",
                                   {{"n_layer", 2},
                                    {"n_embd", 384},
                                    {"n_head", 6},
                                    {"vocab_size", 1024},
                                    {"seq_len", 64}}}}}});
  auto e = initialize(cfg, make_model(cfg), quiet());
  const size_t n = 2 * 64;
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t(i * 13 % 1024);
  e->tracer().set_enabled(true);
  e->forward(in, tgt);
  e->backward();
  e->step();
  e->tracer().set_enabled(false);
  double counted = 0;
  for (const auto& ev : e->tracer().drain())
    if (ev.category == Category::forward || ev.category == Category::backward)
      counted += double(ev.flops);

  // Parameters that multiply activations: all but the position embedding
  // (a lookup); the token embedding counts once, as the lm_head's weight.
  const double matmul_params =
      double(e->param_count()) - double(test::gpt2_of(*e).embedding->wpe()->numel);
  const double closed =
      profiler::flops::decoder_step_closed_form(matmul_params, 2, 384, 64, double(n), true);
  const double rel = (counted - closed) / closed;
  std::printf("counted %.4g FLOP per step, closed form %.4g, difference %+.3f %%\n", counted,
              closed, 100 * rel);
  EXPECT_LT(std::abs(rel), 0.01);
}

TEST(Profiling, TiedWeightsAreCountedOnce) {
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  int64_t sum = 0;
  for (auto* m : e->module_tree().modules()) sum += m->own_param_count();
  EXPECT_EQ(sum, e->param_count());
  EXPECT_EQ(test::gpt2_of(*e).lm_head->own_param_count(), 0);
}

struct DbRun {
  test::CommandResult cmd;
  std::string db;
};

DbRun train_into(const test::TempDir& dir, int ranks, const nlohmann::json& patch,
                 const std::string& args) {
  const std::string cfg = dir / "cfg.json";
  test::write_json(cfg, test::tiny_config_json(patch));
  DbRun r;
  r.db = dir / "runs.db";
  r.cmd = test::run_command(test::launcher(ranks) + test::tool("hybrid-train") +
                            " --quiet --config " + cfg + " --db " + r.db + " " + args);
  return r;
}

TEST(Profiling, FourRanksAndAReaderShareTheStore) {
  test::TempDir dir;
  const std::string db = dir / "runs.db";
  { profiler::RunStore create(db); }  // the reader opens read-only: the file must exist
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, read_errors{0}, reads_while_running{0};
  int finished_runs_seen_last = -1;  // by the reader's last read, after training
  auto read_once = [&] {
    try {
      profiler::RunStore ro(db, profiler::OpenMode::read_only);
      int finished = 0;
      for (const auto& run : ro.list_runs()) {
        (void)ro.load_profile(run.id);
        if (run.status == profiler::RunStatus::running) ++reads_while_running;
        if (run.status == profiler::RunStatus::ok) ++finished;
      }
      ++reads;
      return finished;
    } catch (const std::exception&) {
      ++read_errors;
      return -1;
    }
  };
  // The reads are ordered around training so that no count depends on the
  // machine's speed: one before it starts, one after it ended, and whatever the
  // reader gets in between overlaps the four writers (printed, not asserted).
  std::promise<void> read_before;
  std::thread reader([&] {
    read_once();
    read_before.set_value();
    while (true) {
      const bool last = done;
      const int finished = read_once();
      if (last) {
        finished_runs_seen_last = finished;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  read_before.get_future().wait();
  const auto r = train_into(dir, 4, {{"zero_optimization", {{"stage", 3}}}}, "--steps 12");
  done = true;
  reader.join();
  ASSERT_EQ(r.cmd.exit_code, 0) << r.cmd.output;
  std::printf("%d reads, %d of them while the run was running\n", reads.load(),
              reads_while_running.load());
  EXPECT_GE(reads.load(), 2);
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_EQ(finished_runs_seen_last, 1);  // the read-only reader sees what the writers committed

  profiler::RunStore store(db, profiler::OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, profiler::RunStatus::ok);
  EXPECT_EQ(runs[0].world_size, 4);
  const auto p = store.load_profile(runs[0].id);
  EXPECT_EQ(p.steps.size(), 12u);
  EXPECT_EQ(p.step_ranks.size(), 4u * 12u);
  EXPECT_EQ(p.ranks.size(), 4u);
  std::set<int> ranks_with_layers, ranks_with_memory;
  for (const auto& l : p.layers) ranks_with_layers.insert(l.rank);
  for (const auto& m : p.memory) ranks_with_memory.insert(m.rank);
  EXPECT_EQ(ranks_with_layers.size(), 4u);
  EXPECT_EQ(ranks_with_memory.size(), 4u);
  EXPECT_GT(store.event_count(runs[0].id), 0);
}

TEST(Profiling, AKilledRunLeavesAConsistentStoreAndIsMarkedFailed) {
  test::TempDir dir;
  const auto r = train_into(dir, 2, {}, "--steps 30 --kill-after-step 15");
  EXPECT_NE(r.cmd.exit_code, 0) << r.cmd.output;
  profiler::RunStore store(r.db);
  EXPECT_EQ(store.integrity_check(), "ok");
  auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u) << r.cmd.output;
  EXPECT_EQ(runs[0].status, profiler::RunStatus::running);
  EXPECT_EQ(store.steps(runs[0].id).size(), 10u);  // flushed in batches of 10
  const auto marked = store.mark_stale_runs();
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_EQ(store.get_run(runs[0].id).status, profiler::RunStatus::failed);
}

TEST(Profiling, OverlapHidesCommunicationAndTheTraceOpens) {
  test::TempDir dir;
  const auto r = train_into(
      dir, 2,
      {{"zero_optimization", {{"stage", 2}, {"overlap_comm", true}, {"reduce_bucket_size", 5000}}},
       {"hybrid", {{"profiler", {{"trace", true}, {"trace_steps", 2}}}}}},
      "--steps 8");
  ASSERT_EQ(r.cmd.exit_code, 0) << r.cmd.output;
  profiler::RunStore store(r.db, profiler::OpenMode::read_only);
  const auto id = store.list_runs().at(0).id;
  double comm = 0, exposed = 0;
  for (const auto& s : store.step_ranks(id)) {
    comm += s.comm_ms;
    exposed += s.exposed_comm_ms;
    EXPECT_LE(s.exposed_comm_ms, s.comm_ms + 1e-6) << "step " << s.step << " rank " << s.rank;
  }
  std::printf("communication %.1f ms, exposed %.1f ms (%.0f %% hidden)\n", comm, exposed,
              100 * (1 - exposed / comm));
  EXPECT_GT(comm, 0.0);
  // How much overlap hides is the machine's to decide (on two busy cores the
  // comm thread may run only while compute waits): bench_zero measures it
  // with overlap on and off side by side; the test asserts the accounting
  // (exposed within comm, per step and rank) and the trace (issue 26).
  EXPECT_LE(exposed, comm + 1e-6);

  const auto ex = test::run_command(std::string(HYBRID_BINARY_DIR) +
                                    "/profiler/hybrid-prof export-trace --db " + r.db + " --run " +
                                    std::to_string(id) + " -o " + (dir / "trace.json"));
  ASSERT_EQ(ex.exit_code, 0) << ex.output;
  const auto trace = test::read_json(dir / "trace.json");
  std::set<int> pids;
  std::set<std::string> lanes;
  double last_ts = -1e300;
  int complete = 0;
  for (const auto& ev : trace.at("traceEvents")) {
    if (ev.at("ph") == "M") {
      if (ev.at("name") == "thread_name") lanes.insert(ev.at("args").at("name").get<std::string>());
      continue;
    }
    ASSERT_EQ(ev.at("ph"), "X");
    for (const char* key : {"name", "ts", "dur", "pid", "tid"})
      ASSERT_TRUE(ev.contains(key)) << key;
    EXPECT_GE(ev.at("ts").get<double>(), last_ts);
    last_ts = ev.at("ts").get<double>();
    pids.insert(ev.at("pid").get<int>());
    ++complete;
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  EXPECT_TRUE(lanes.count("compute") && lanes.count("comm")) << "lanes per rank, comm on its own";
  EXPECT_GT(complete, 50);
}

}  // namespace
}  // namespace hybrid
