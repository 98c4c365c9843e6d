// 1-bit Adam (engine/optim/onebit_adam.cpp) on real MPI ranks against a NumPy
// implementation of DeepSpeed's OnebitAdam and compressed all-reduce
// (scripts/peers/onebit_adam_reference.py, NumPy 2.4.6, its output in
// tests/mpi/data/onebit_adam_npW.json): three tensors whose sizes are no
// multiple of the compression's padding, a masked range, per-rank gradients
// that depend on the parameters, 20 steps through the initialization step, the
// warm-up (gradients averaged as the engine reduces them) and 14 compressed
// steps. Every rank ends with the same parameters, equal to the reference
// within 1e-6.
#pragma once

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "engine/optim/optimizer.h"
#include "kernels/registry.h"
#include "mpi_test_harness.h"
#include "onebit_problem.h"
#include "tests/common/json_file.h"

namespace hybrid::test {
namespace {

TEST_F(MpiTest, OneBitAdamEqualsDeepSpeedsAlgorithmThroughWarmUpAndCompression) {
  engine::OptimizerConfig cfg;
  cfg.type = "OneBitAdam";
  cfg.lr = 1e-2f, cfg.beta1 = 0.9f, cfg.beta2 = 0.999f, cfg.eps = 1e-8f;
  cfg.weight_decay = 0.01f, cfg.freeze_step = 6;
  std::vector<int64_t> starts = {0};
  for (int n : kSizes) starts.push_back(starts.back() + n);
  const size_t total = size_t(starts.back());
  auto opt = engine::make_optimizer(cfg, starts, &comm(), {{kMaskBegin, kMaskEnd}});
  auto backend = kernels::make_cpu_backend();
  std::vector<float> p(total), state(2 * total, 0.0f);
  for (size_t i = 0; i < total; ++i) p[i] = float(0.1 * std::sin(double(i) + 1.0));
  int local_steps = 0;
  for (int s = 1; s <= 20; ++s) {
    std::vector<float> g = onebit_gradient(p, rank(), s);
    engine::OptimizerStepArgs a;
    a.lr = cfg.lr, a.step = s, a.grad = g.data(), a.master = p.data(), a.state = state.data();
    a.n = total;
    if (opt->reduces_gradients(s)) {  // as the engine: summed, then averaged by grad_scale
      comm().all_reduce(g.data(), total, DType::f32, ReduceOp::sum);
      a.grad_scale = 1.0f / float(world());
    } else {
      ++local_steps;
    }
    opt->step(*backend, a);
  }
  EXPECT_EQ(local_steps, 14) << "steps 7 to 20 compress";
  std::vector<float> all(total * size_t(world()));
  comm().all_gather(p.data(), all.data(), std::vector<size_t>(size_t(world()), total), DType::f32);
  for (int r = 1; r < world(); ++r)
    for (size_t i = 0; i < total; ++i)
      EXPECT_EQ(all[size_t(r) * total + i], p[i]) << "rank " << r << " index " << i;
  const std::string file = std::string(HYBRID_SOURCE_DIR) + "/tests/mpi/data/onebit_adam_np" +
                           std::to_string(world()) + ".json";
  const auto ref = read_json(file).at("params").get<std::vector<double>>();
  ASSERT_EQ(ref.size(), total);
  double worst = 0.0;
  for (size_t i = 0; i < total; ++i) worst = std::max(worst, std::abs(double(p[i]) - ref[i]));
  EXPECT_LT(worst, 1e-6) << "largest difference from the reference";
  if (rank() == 0) std::printf("[onebit] %d ranks: largest difference %.3g\n", world(), worst);
}

// A loaded checkpoint drops the compression errors (DeepSpeed resets them):
// the next compressed step equals one from zero errors.
TEST_F(MpiTest, OneBitAdamStateLoadedResetsTheErrors) {
  engine::OptimizerConfig cfg;
  cfg.type = "OneBitAdam";
  cfg.freeze_step = 0;
  const std::vector<int64_t> starts = {0, 64};
  auto backend = kernels::make_cpu_backend();
  const auto run = [&](bool reload) {
    auto opt = engine::make_optimizer(cfg, starts, &comm(), {});
    std::vector<float> p(64, 0.5f), state(128, 0.0f);
    for (int s = 1; s <= 5; ++s) {
      auto g = onebit_gradient(p, rank(), s);
      engine::OptimizerStepArgs a;
      a.lr = 1e-2f, a.step = s, a.grad = g.data(), a.master = p.data(), a.state = state.data();
      a.n = 64;
      if (opt->reduces_gradients(s)) {
        comm().all_reduce(g.data(), 64, DType::f32, ReduceOp::sum);
        a.grad_scale = 1.0f / float(world());
      }
      if (s == 5 && reload) opt->state_loaded();
      opt->step(*backend, a);
    }
    return p;
  };
  const auto kept = run(false), reset = run(true);
  EXPECT_NE(kept, reset) << "step 5 from the errors of step 4 vs from zero errors";
}

}  // namespace
}  // namespace hybrid::test
