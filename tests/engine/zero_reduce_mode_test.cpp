// zero_optimization.reduce_scatter on real `mpirun` runs of hybrid-train.
// false at stages 1-2 averages gradients by all-reduce (each rank keeping its
// partition): the comm tracer's records (comm_stats in the run store) show the
// same gradient bytes moved by all-reduce instead of reduce-scatter, i.e. the
// bus volume 2(W-1)/W instead of (W-1)/W times those bytes, and the training is
// unchanged: at 2 ranks every gradient element is one addition a + b, which is
// commutative, so losses and weights are bitwise equal; at 4 ranks Open MPI's
// all-reduce and reduce-scatter may add in different orders, so weights agree
// to fp32 rounding (relative 1e-5). At stages 0 and 3 the key changes nothing
// and the run says so.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model/gpt2/gpt2.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine_test_util.h"
#include "profiler/comm_tracer.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

constexpr int kSteps = 6;
constexpr int kGas = 2;

struct TrainRun {
  test::CommandResult cmd;
  nlohmann::json result;
  std::vector<float> weights;
  std::vector<profiler::CommStatRow> comm;  // the comm tracer's aggregates, every rank
};

TrainRun train(const test::TempDir& dir, const std::string& name, int ranks, int stage,
               bool reduce_scatter) {
  const std::string cfg = dir / (name + ".json"), db = dir / (name + ".db"),
                    out = dir / (name + ".bin"), res = dir / (name + ".result.json");
  nlohmann::json patch = {{"gradient_accumulation_steps", kGas},
                          {"zero_optimization",
                           {{"stage", stage},
                            {"reduce_scatter", reduce_scatter},
                            {"overlap_comm", true},
                            {"reduce_bucket_size", 3000},
                            {"stage3_param_persistence_threshold", 200}}}};
  patch.merge_patch(test::kAdamForComparedRuns);
  test::write_json(cfg, test::tiny_config_json(patch));
  TrainRun run;
  run.cmd = test::run_command(test::launcher(ranks) + test::tool("hybrid-train") + " --config " +
                              cfg + " --steps " + std::to_string(kSteps) + " --db " + db +
                              " --export-llmc " + out + " --result " + res);
  EXPECT_EQ(run.cmd.exit_code, 0) << run.cmd.output;
  if (run.cmd.exit_code != 0) return run;
  run.result = test::read_json(res);
  const auto w = engine::read_llmc_checkpoint(out);
  for (auto* t : w.tensors()) run.weights.insert(run.weights.end(), t->begin(), t->end());
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  run.comm = store.comm_stats(store.list_runs().at(0).id);
  return run;
}

// Message bytes of one collective kind on one rank over the run (nccl-tests'
// message sizes, as the tracer records them).
double traced_bytes(const TrainRun& run, std::string_view op, int rank) {
  double bytes = 0;
  for (const auto& c : run.comm)
    if (c.op == op && c.rank == rank) bytes += double(c.bytes) * double(c.count);
  return bytes;
}

// Bytes each rank puts on the wire per nccl-tests' bus factors: the volume.
double traced_volume(const TrainRun& run, int rank, int world) {
  double v = 0;
  for (const auto& c : run.comm)
    if (c.rank == rank)
      v += double(c.bytes) * double(c.count) *
           profiler::bus_factor(profiler::parse_collective(c.op), world);
  return v;
}

// N·d: one reduction pass over every gradient (the padding is never reduced).
double gradient_bytes() {
  const auto cfg = test::tiny_config();
  engine::GPT2 model(cfg.model, cfg.padded_vocab());
  engine::ModuleTree tree(model);
  return double(tree.param_count()) * double(kernels::dtype_size(cfg.param_dtype()));
}

double category(const nlohmann::json& result, const char* key, const char* cat) {
  return result.at(key).at(cat).get<double>();
}

TEST(ZeroReduceMode, AllReduceAtStagesOneAndTwoMovesTwiceTheBusVolumeWithEqualLosses) {
  test::TempDir dir;
  constexpr int W = 2;
  const double grad = gradient_bytes();
  for (int stage : {1, 2}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    const TrainRun rs = train(dir, fmt::format("rs{}", stage), W, stage, true);
    const TrainRun ar = train(dir, fmt::format("ar{}", stage), W, stage, false);
    ASSERT_EQ(rs.cmd.exit_code, 0);
    ASSERT_EQ(ar.cmd.exit_code, 0);
    EXPECT_EQ(ar.cmd.output.find("reduce_scatter"), std::string::npos)
        << "no warning: the key has an effect here\n"
        << ar.cmd.output;

    // Stage 1 reduces once per step, stage 2 once per micro-step.
    const double passes = stage == 1 ? kSteps : kSteps * kGas;
    for (int rank = 0; rank < W; ++rank) {
      EXPECT_EQ(traced_bytes(rs, "reduce_scatter", rank), passes * grad) << rank;
      EXPECT_EQ(traced_bytes(ar, "reduce_scatter", rank), 0.0) << rank;
      // The same messages, now all-reduced; the small scalar all-reduces (loss
      // average, norm and overflow) are in both runs.
      const double scalars = traced_bytes(rs, "all_reduce", rank);
      EXPECT_LT(scalars, 16.0 * kSteps) << rank;
      EXPECT_EQ(traced_bytes(ar, "all_reduce", rank) - scalars, passes * grad) << rank;
      EXPECT_EQ(traced_bytes(ar, "all_gather", rank), traced_bytes(rs, "all_gather", rank));
      // Volume: all-reduce 2(W-1)/W, reduce-scatter (W-1)/W of the gradient bytes.
      const double extra = traced_volume(ar, rank, W) - traced_volume(rs, rank, W);
      EXPECT_DOUBLE_EQ(extra, (2.0 * (W - 1) / W - double(W - 1) / W) * passes * grad) << rank;
      std::printf(
          "stage %d rank %d: gradient bus volume %.0f B (reduce-scatter) vs %.0f B (all-reduce)\n",
          stage, rank, double(W - 1) / W * passes * grad, 2.0 * (W - 1) / W * passes * grad);
    }
    // Two ranks: a + b either way, bit for bit.
    EXPECT_EQ(ar.result.at("losses"), rs.result.at("losses"));
    EXPECT_EQ(ar.weights, rs.weights);
    // In-place all-reduce needs no receive buffers (stage 1: grads.reduced; stage 2:
    // the buckets' receive buffers); the memory model predicts that.
    const char* cat = stage == 1 ? "grads" : "comm";
    EXPECT_LT(category(ar.result, "peak_memory_bytes", cat),
              category(rs.result, "peak_memory_bytes", cat));
    for (const TrainRun* run : {&rs, &ar})
      EXPECT_EQ(category(run->result, "peak_memory_bytes", cat),
                category(run->result, "predicted_memory_bytes", cat));
  }
}

TEST(ZeroReduceMode, FourRanksAgreeToRounding) {
  test::TempDir dir;
  const TrainRun rs = train(dir, "rs", 4, 2, true);
  const TrainRun ar = train(dir, "ar", 4, 2, false);
  ASSERT_EQ(rs.cmd.exit_code, 0);
  ASSERT_EQ(ar.cmd.exit_code, 0);
  ASSERT_EQ(ar.weights.size(), rs.weights.size());
  const double rel = test::max_relative_difference(ar.weights, rs.weights);
  std::printf("4 ranks, stage 2: all-reduce vs reduce-scatter: max |dw| / max |w| = %.2e%s\n", rel,
              ar.weights == rs.weights ? " (bitwise equal)" : "");
  EXPECT_LT(rel, 1e-5);
  const auto l_ar = ar.result.at("losses").get<std::vector<double>>();
  const auto l_rs = rs.result.at("losses").get<std::vector<double>>();
  for (size_t i = 0; i < l_rs.size(); ++i) EXPECT_NEAR(l_ar[i], l_rs[i], 1e-5 * l_rs[i]) << i;
}

TEST(ZeroReduceMode, StagesZeroAndThreeIgnoreItAndSaySo) {
  test::TempDir dir;
  for (int stage : {0, 3}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    const TrainRun rs = train(dir, fmt::format("rs{}", stage), 2, stage, true);
    const TrainRun ar = train(dir, fmt::format("ar{}", stage), 2, stage, false);
    ASSERT_EQ(ar.cmd.exit_code, 0);
    EXPECT_NE(ar.cmd.output.find(fmt::format(
                  "config: warning: zero_optimization.reduce_scatter (false) has no effect at "
                  "stage {}",
                  stage)),
              std::string::npos)
        << ar.cmd.output;
    for (const char* op : {"all_reduce", "reduce_scatter", "all_gather"})
      EXPECT_EQ(traced_bytes(ar, op, 0), traced_bytes(rs, op, 0)) << op;
    EXPECT_EQ(ar.weights, rs.weights);
  }
}

}  // namespace
}  // namespace hybrid
