// Tensor parallelism (Megatron's split) across real `mpirun` processes running
// hybrid-train: tp 2 alone, beside 2 data-parallel ranks (ZeRO 0, 1 and 2),
// beside 2 pipeline stages and in all three (tp 2 × pp 2 × dp 2, 8 ranks)
// give the single-process run's per-step losses (1e-5) and final weights over
// 10 steps; a killed run resumes bitwise, its checkpoint loads in one process
// (and hybrid-ckpt consolidates it) and a one-process checkpoint loads under
// tp 2; the bytes each group moves per step equal the closed forms.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "engine_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

constexpr int kSteps = 10;
constexpr int kMicroBatches = 4;  // samples per step: micro 2 × 4 (× dp ranks)

// A vocabulary of 100 in 128 padded rows, so both vocabulary shards hold real
// ids (64 and 36). AdamW with weight decay and clipping, so that the norm over
// shards (replicated parameters counted once) matters.
nlohmann::json tp_patch(int tp, int pp, int dp, const nlohmann::json& extra = {}) {
  nlohmann::json p = {
      {"gradient_accumulation_steps", kMicroBatches / dp},
      {"gradient_clipping", 0.5},
      {"optimizer", {{"params", {{"lr", 3e-3}}}}},
      {"hybrid", {{"model", {{"n_layer", 2}, {"vocab_size", 100}}}}},
  };
  if (tp > 1) p["tensor_model_parallel_size"] = tp;
  if (pp > 1) p["pipeline"] = {{"stages", pp}};
  p.merge_patch(test::kAdamForComparedRuns);
  if (!extra.is_null()) p.merge_patch(extra);
  return p;
}

using test::losses;

struct Layout {
  const char* name;
  int tp, pp, dp;
  nlohmann::json extra;
};

void expect_matches(const test::TrainRun& run, const test::TrainRun& ref, const char* name) {
  const auto a = losses(run), b = losses(ref);
  ASSERT_EQ(a.size(), b.size()) << name;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << name << " step " << i + 1;
  ASSERT_EQ(run.weights.size(), ref.weights.size()) << name;
  const double rel = test::max_relative_difference(run.weights, ref.weights);
  EXPECT_LT(rel, 1e-5) << name;
  std::printf("%s: step-%zu loss %.6f (one process %.6f), max |Δw| / max |w| = %.2e\n", name,
              a.size(), a.empty() ? 0.0 : a.back(), b.empty() ? 0.0 : b.back(), rel);
}

TEST(TensorParallel, LossesMatchTheSingleProcessRun) {
  test::TempDir dir;
  const auto ref = test::run_hybrid_train(dir, "ref", 1, tp_patch(1, 1, 1),
                                          fmt::format("--quiet --steps {}", kSteps));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  const Layout layouts[] = {
      {"tp2", 2, 1, 1, {}},
      {"tp2_checkpointed", 2, 1, 1, {{"activation_checkpointing", {{"number_checkpoints", 2}}}}},
      {"tp2_dp2_zero0", 2, 1, 2, {}},
      {"tp2_dp2_zero1", 2, 1, 2, {{"zero_optimization", {{"stage", 1}}}}},
      {"tp2_dp2_zero2", 2, 1, 2, {{"zero_optimization", {{"stage", 2}}}}},
      {"tp2_pp2", 2, 2, 1, {}},
      // The DeepSpeed guides' shape, as written: tp 2, 2 stages checkpointing
      // every block, ZeRO-1.
      {"tp2_pp2_checkpointed_zero1",
       2,
       2,
       1,
       {{"pipeline", {{"activation_checkpoint_interval", 1}}},
        {"zero_optimization", {{"stage", 1}}}}},
      {"tp2_pp2_dp2_zero1", 2, 2, 2, {{"zero_optimization", {{"stage", 1}}}}},
  };
  for (const auto& l : layouts) {
    const auto run =
        test::run_hybrid_train(dir, l.name, l.tp * l.pp * l.dp, tp_patch(l.tp, l.pp, l.dp, l.extra),
                               fmt::format("--quiet --steps {}", kSteps));
    ASSERT_EQ(run.exit_code, 0) << l.name << "\n" << run.output;
    expect_matches(run, ref, l.name);
  }
}

TEST(TensorParallel, AKilledRunResumesBitwiseAndCheckpointsLoadUnderAnotherLayout) {
  test::TempDir dir;
  const auto patch = tp_patch(2, 2, 1, {{"zero_optimization", {{"stage", 1}}}});
  const std::string last = dir / "last";
  const auto full = test::run_hybrid_train(dir, "full", 4, patch,
                                           "--quiet --steps 8 --save " + last + " --save-every 8");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  // The pieces are put back together (weights and Adam's moments): one process
  // continues from them.
  test::expect_killed_run_resumes(dir, 4, patch, tp_patch(1, 1, 1), full);
  if (HasFatalFailure()) return;
  // hybrid-ckpt puts the last checkpoint's pieces together into the weights
  // the run exported, bit for bit.
  const std::string llmc = dir / "consolidated.bin";
  const auto cons = test::run_command(test::tool("hybrid-ckpt") + " consolidate --dir " + last +
                                      " --out " + llmc);
  ASSERT_EQ(cons.exit_code, 0) << cons.output;
  std::vector<float> consolidated;
  const auto weights = engine::read_llmc_checkpoint(llmc);
  for (auto* t : weights.tensors()) consolidated.insert(consolidated.end(), t->begin(), t->end());
  EXPECT_EQ(consolidated, full.weights);

  // And the other way: a one-process checkpoint cut for tp 2 continues alike.
  const std::string one = dir / "one";
  const auto first = test::run_hybrid_train(dir, "one_first", 1, tp_patch(1, 1, 1),
                                            "--quiet --steps 4 --save " + one + " --save-every 4");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto again = test::run_hybrid_train(dir, "one_again", 1, tp_patch(1, 1, 1),
                                            "--quiet --steps 4 --load " + one);
  const auto split =
      test::run_hybrid_train(dir, "split", 2, tp_patch(2, 1, 1), "--quiet --steps 4 --load " + one);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  ASSERT_EQ(split.exit_code, 0) << split.output;
  expect_matches(split, again, "one-process checkpoint under tp 2");
}

// tp 2 on 2 ranks (dp 1, ZeRO 0), per micro-batch of N = B·T tokens: forward
// sums the embedding and each block's two row-parallel outputs, backward each
// block's two column-parallel input gradients and lm_head's (N·C values each);
// the loss gathers 2N statistics from each shard. Per step: the norm over tp
// (2 floats) and the loss averaged over the world (1 float).
TEST(TensorParallel, BytesPerStepPerGroupEqualTheClosedForms) {
  test::TempDir dir;
  const int64_t B = 2, T = 16, C = 32, L = 2, tp = 2, m = kMicroBatches, N = B * T;
  const auto run = test::run_hybrid_train(dir, "bytes", 2, tp_patch(2, 1, 1), "--quiet --steps 3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto& g = run.result.at("comm_bytes_per_step_by_group");
  const double activation = double(N * C * 4);
  EXPECT_EQ(g.at("tp").at("all_reduce").get<double>(),
            double(m) * double(4 * L + 2) * activation + 8.0);
  EXPECT_EQ(g.at("tp").at("all_gather").get<double>(), double(m * tp * 2 * N * 4));
  EXPECT_EQ(g.at("world").at("all_reduce").get<double>(), 4.0);
  for (const char* kind : {"reduce_scatter", "all_gather", "send", "recv"})
    EXPECT_EQ(g.at("dp").at(kind).get<double>(), 0.0) << kind;
}

// The run store keeps the tp group's collectives apart (every rank's
// all-reduces and the loss's all-gather), and hybrid-prof's comm report
// names the group.
TEST(TensorParallel, TheStoreAndTheCommReportKeepTheTpGroupApart) {
  test::TempDir dir;
  const std::string db = dir / "tp.db";
  const auto run =
      test::run_hybrid_train(dir, "store", 2, tp_patch(2, 1, 1), "--quiet --steps 2 --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const int64_t id = store.list_runs().at(0).id;
  const auto p = store.load_profile(id);
  std::set<std::tuple<int, std::string, std::string>> seen;  // (rank, group, op)
  for (const auto& c : p.comm) seen.insert({c.rank, c.group, c.op});
  for (int rank : {0, 1}) {
    EXPECT_TRUE(seen.count({rank, "tp", "all_reduce"})) << rank;
    EXPECT_TRUE(seen.count({rank, "tp", "all_gather"})) << rank;
    EXPECT_FALSE(seen.count({rank, "world", "all_gather"})) << rank;
  }
  const auto report =
      test::run_command(std::string(HYBRID_BINARY_DIR) + "/profiler/hybrid-prof report comm --db " +
                        db + " --run " + std::to_string(id));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("\n  tp "), std::string::npos) << report.output;  // by group
  // The compute thread waits for every tp collective (each is synchronous), so
  // on each rank every collective of the tp group's kinds and sizes lies inside
  // one of the compute lane's waits: exposed communication, asserted on the
  // intervals, not on their lengths, which the machine's load decides.
  std::set<std::pair<std::string, uint64_t>> tp_only, other;  // (op, message bytes)
  for (const auto& c : p.comm) (c.group == "tp" ? tp_only : other).insert({c.op, c.bytes});
  for (const auto& key : other) tp_only.erase(key);
  const auto events = store.events(id);
  for (int rank : {0, 1}) {
    std::vector<std::pair<int64_t, int64_t>> waits;
    for (const auto& e : events.events)
      if (e.rank == rank && events.names.at(e.name_id) == "comm_wait")
        waits.emplace_back(e.start_ns, e.start_ns + e.dur_ns);
    size_t collectives = 0, inside_a_wait = 0;
    for (const auto& e : events.events) {
      if (e.rank != rank || e.lane != profiler::kLaneComm ||
          !tp_only.count({events.names.at(e.name_id), e.bytes}))
        continue;
      ++collectives;
      const int64_t begin = e.start_ns, end = e.start_ns + e.dur_ns;
      inside_a_wait += std::any_of(waits.begin(), waits.end(),
                                   [&](auto w) { return w.first <= begin && end <= w.second; });
    }
    EXPECT_GT(collectives, 0u) << rank;
    EXPECT_EQ(inside_a_wait, collectives) << "rank " << rank;
  }
  double exposed_ms = 0;
  for (const auto& s : p.step_ranks) exposed_ms += s.exposed_comm_ms;
  EXPECT_GT(exposed_ms, 0.0);
}

}  // namespace
}  // namespace hybrid
