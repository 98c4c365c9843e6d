// Tensor and pipeline parallelism on GPUs (label gpu): hybrid-train with
// "device": "cuda" under `mpirun -np 2` (one GPU per rank, NCCL groups split
// from the world with ncclCommSplit) gives the one-GPU run's per-step losses
// within fp32 tolerance and its final weights, for tp 2 and for pp 2 (and tp 2
// × pp 2 on four GPUs); a checkpoint saved under tp 2 or pp 2 on GPUs continues
// in one process. Mirrors tests/engine/tensor_parallel_test.cpp and
// pipeline_test.cpp (the CPU runs, 1e-5). Skips without a CUDA device, and a
// layout skips when the machine has fewer GPUs than ranks (NCCL refuses two
// ranks on one GPU).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine_test_util.h"

#if HYBRID_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace hybrid {
namespace {

constexpr int kSteps = 6;
constexpr int kMicroBatches = 4;
// GPU reductions split differently across ranks (tp sums partial products,
// NCCL sums in its own order): fp32 rounding, not the CPU runs' 1e-5.
constexpr double kLossTolerance = 1e-4;
constexpr double kWeightTolerance = 1e-4;

int gpus() {
#if HYBRID_HAVE_CUDA
  return kernels::cuda_device_count();
#else
  return 0;
#endif
}

// tensor_parallel_test.cpp's model and optimizer (vocabulary 100 in 128
// padded rows, clipping so that the norm over groups matters), on CUDA in fp32.
nlohmann::json gpu_patch(int tp, int pp, const nlohmann::json& extra = {}) {
  nlohmann::json p = {
      {"gradient_accumulation_steps", kMicroBatches},
      {"gradient_clipping", 0.5},
      {"optimizer", {{"params", {{"lr", 3e-3}}}}},
      {"hybrid", {{"device", "cuda"}, {"model", {{"n_layer", 2}, {"vocab_size", 100}}}}},
  };
  if (tp > 1) p["tensor_model_parallel_size"] = tp;
  if (pp > 1) p["pipeline"] = {{"stages", pp}};
  if (!extra.is_null()) p.merge_patch(extra);
  return p;
}

void expect_close(const test::TrainRun& run, const test::TrainRun& ref, const std::string& name,
                  size_t ref_offset = 0) {
  const auto a = test::losses(run), b = test::losses(ref);
  ASSERT_LE(a.size() + ref_offset, b.size()) << name;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[ref_offset + i], kLossTolerance) << name << " step " << i + 1;
  std::printf("%s: step-%zu loss %.6f (one GPU %.6f)\n", name.c_str(), a.size(),
              a.empty() ? 0.0 : a.back(), b.empty() ? 0.0 : b.back());
}

struct Layout {
  const char* name;
  int tp, pp;
  nlohmann::json extra;
  int ranks() const { return tp * pp; }
};

const Layout kLayouts[] = {
    {"tp2", 2, 1, {}},
    {"pp2", 1, 2, {}},
    {"tp2_zero1_checkpointed",
     2,
     1,
     {{"zero_optimization", {{"stage", 1}}},
      {"activation_checkpointing", {{"number_checkpoints", 2}}}}},
    {"pp2_zero1", 1, 2, {{"zero_optimization", {{"stage", 1}}}}},
    {"tp2_pp2", 2, 2, {}},
};

#define SKIP_WITHOUT_GPUS(n)                                                                \
  do {                                                                                      \
    if (gpus() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA devices, found " << gpus(); \
  } while (0)

TEST(ParallelGpu, LossesAndWeightsMatchOneGpu) {
  SKIP_WITHOUT_GPUS(2);
  test::TempDir dir;
  const auto ref = test::run_hybrid_train(dir, "ref", 1, gpu_patch(1, 1),
                                          fmt::format("--quiet --steps {}", kSteps));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  for (const Layout& l : kLayouts) {
    if (gpus() < l.ranks()) {
      std::printf("%s: skipped (needs %d GPUs)\n", l.name, l.ranks());
      continue;
    }
    const auto run = test::run_hybrid_train(dir, l.name, l.ranks(), gpu_patch(l.tp, l.pp, l.extra),
                                            fmt::format("--quiet --steps {}", kSteps));
    ASSERT_EQ(run.exit_code, 0) << l.name << "\n" << run.output;
    expect_close(run, ref, l.name);
    ASSERT_EQ(run.weights.size(), ref.weights.size()) << l.name;
    EXPECT_LT(test::max_relative_difference(run.weights, ref.weights), kWeightTolerance) << l.name;
  }
}

// Each partition's master weights and moments come off the GPU into its file
// and the pieces go back together in one process: it continues as the 2-rank
// run does.
TEST(ParallelGpu, CheckpointsOfTwoGpusContinueOnOne) {
  SKIP_WITHOUT_GPUS(2);
  test::TempDir dir;
  for (const auto& [name, tp, pp] : {std::tuple{"tp2", 2, 1}, std::tuple{"pp2", 1, 2}}) {
    const std::string ckpt = dir / (std::string(name) + "_ckpt");
    const auto patch = gpu_patch(tp, pp, {{"zero_optimization", {{"stage", 1}}}});
    const auto full =
        test::run_hybrid_train(dir, std::string(name) + "_full", 2, patch,
                               "--quiet --steps 8 --save " + ckpt + " --save-every 4");
    ASSERT_EQ(full.exit_code, 0) << name << "\n" << full.output;
    const auto one =
        test::run_hybrid_train(dir, std::string(name) + "_one", 1,
                               gpu_patch(1, 1, {{"zero_optimization", {{"stage", 1}}}}),
                               "--quiet --steps 4 --load " + ckpt + " --tag global_step4");
    ASSERT_EQ(one.exit_code, 0) << name << "\n" << one.output;
    ASSERT_EQ(test::losses(one).size(), 4u) << name;
    expect_close(one, full, std::string(name) + " checkpoint in one process", 4);
  }
}

}  // namespace
}  // namespace hybrid
