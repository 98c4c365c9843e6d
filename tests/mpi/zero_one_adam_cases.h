// 0/1 Adam (engine/optim/zero_one_adam.cpp) on real MPI ranks against a NumPy
// implementation of DeepSpeed's ZeroOneAdam (scripts/peers/
// zero_one_adam_reference.py, NumPy 2.4.6, its output in
// tests/mpi/data/zero_one_adam_npW.json), on 1-bit Adam's problem
// (onebit_problem.h: three tensors, a masked range, per-rank gradients that
// depend on the parameters). 28 steps with var_freeze_step 8, var_update_scaler
// 2, local_step_scaler 3, local_step_clipper 4 pass through the initialization
// step, the variance phase (variance steps at growing intervals, compressed
// gradients between them), the freeze, and local steps whose synchronisation
// interval grows 1, 2, 4 and stops at the clipper. Each rank ends within 1e-6
// of the reference's same rank; the ranks agree within 1e-6 (undoing the local
// updates rounds per rank, in DeepSpeed too: the reference's ranks differ by a
// few ulps).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/optim/optimizer.h"
#include "kernels/registry.h"
#include "mpi_test_harness.h"
#include "onebit_problem.h"
#include "tests/common/json_file.h"

namespace hybrid::test {
namespace {

engine::OptimizerConfig zero_one_config() {
  engine::OptimizerConfig cfg;
  cfg.type = "ZeroOneAdam";
  cfg.lr = 1e-2f, cfg.beta1 = 0.9f, cfg.beta2 = 0.999f, cfg.eps = 1e-8f;
  cfg.weight_decay = 0.01f;
  cfg.var_freeze_step = 8, cfg.var_update_scaler = 2;
  cfg.local_step_scaler = 3, cfg.local_step_clipper = 4;
  return cfg;
}

// Runs `steps` steps as the engine does (the gradients summed and averaged when
// the optimizer says so); returns this rank's parameters and counts the steps
// whose gradients were reduced.
std::vector<float> run_zero_one(engine::Optimizer& opt, int steps, int* reduced,
                                int reload_at = 0) {
  const size_t total = size_t(37 + 64 + 130);
  auto backend = kernels::make_cpu_backend();
  std::vector<float> p(total), state(size_t(opt.state_floats_per_param()) * total, 0.0f);
  for (size_t i = 0; i < total; ++i) p[i] = float(0.1 * std::sin(double(i) + 1.0));
  for (int s = 1; s <= steps; ++s) {
    std::vector<float> g = onebit_gradient(p, rank(), s);
    engine::OptimizerStepArgs a;
    a.lr = 1e-2f, a.step = s, a.grad = g.data(), a.master = p.data(), a.state = state.data();
    a.n = total;
    if (s == reload_at) opt.state_loaded();
    if (opt.reduces_gradients(s)) {
      comm().all_reduce(g.data(), total, DType::f32, ReduceOp::sum);
      a.grad_scale = 1.0f / float(world());
      ++*reduced;
    }
    opt.step(*backend, a);
  }
  return p;
}

TEST_F(MpiTest, ZeroOneAdamEqualsDeepSpeedsAlgorithmThroughItsPhases) {
  const engine::OptimizerConfig cfg = zero_one_config();
  std::vector<int64_t> starts = {0};
  for (int n : kSizes) starts.push_back(starts.back() + n);
  const size_t total = size_t(starts.back());
  auto opt = engine::make_optimizer(cfg, starts, &comm(), {{kMaskBegin, kMaskEnd}});
  EXPECT_EQ(opt->state_floats_per_param(), 3);
  int reduced = 0;
  const std::vector<float> p = run_zero_one(*opt, 28, &reduced);
  EXPECT_EQ(reduced, 6) << "steps 1, 2, 3, 4, 6 and 8 reduce the gradients";
  std::vector<float> all(total * size_t(world()));
  comm().all_gather(p.data(), all.data(), std::vector<size_t>(size_t(world()), total), DType::f32);
  double spread = 0.0;
  for (int r = 1; r < world(); ++r)
    for (size_t i = 0; i < total; ++i)
      spread = std::max(spread, std::abs(double(all[size_t(r) * total + i]) - p[i]));
  EXPECT_LT(spread, 1e-6) << "the ranks' parameters after the last synchronisation";
  const std::string file = std::string(HYBRID_SOURCE_DIR) + "/tests/mpi/data/zero_one_adam_np" +
                           std::to_string(world()) + ".json";
  const nlohmann::json doc = read_json(file);
  const auto ref = doc.at("params").at(size_t(rank())).get<std::vector<double>>();
  ASSERT_EQ(ref.size(), total);
  double worst = 0.0;
  for (size_t i = 0; i < total; ++i) worst = std::max(worst, std::abs(double(p[i]) - ref[i]));
  EXPECT_LT(worst, 1e-6) << "largest difference from the reference on rank " << rank();
  auto worst_all = float(worst);
  comm().all_reduce(&worst_all, 1, DType::f32, ReduceOp::max);
  if (rank() == 0)
    std::printf("[zero_one] %d ranks: largest difference %.3g, ranks' spread %.3g\n", world(),
                double(worst_all), spread);
}

// A loaded checkpoint restarts what DeepSpeed's load_state_dict drops (the
// errors, the accumulator, the schedule counters): loading at step 15, where
// the local interval had grown to 2, makes step 15 a synchronisation again
// (interval 1), so the parameters differ from an uninterrupted run's.
TEST_F(MpiTest, ZeroOneAdamStateLoadedRestartsTheSchedule) {
  const std::vector<int64_t> starts = {0, 37, 101, 231};
  auto kept = engine::make_optimizer(zero_one_config(), starts, &comm(), {});
  auto loaded = engine::make_optimizer(zero_one_config(), starts, &comm(), {});
  int reduced = 0;
  const auto a = run_zero_one(*kept, 15, &reduced);
  const auto b = run_zero_one(*loaded, 15, &reduced, /*reload_at=*/15);
  EXPECT_NE(a, b);
  // Reloaded in the variance phase, step 7 is a variance step again (interval 1).
  for (const bool reload : {false, true}) {
    auto early = engine::make_optimizer(zero_one_config(), starts, &comm(), {});
    int early_reduced = 0;
    (void)run_zero_one(*early, 7, &early_reduced, reload ? 7 : 0);
    EXPECT_EQ(early_reduced, reload ? 6 : 5) << "steps 1, 2, 3, 4, 6, and 7 when reloaded there";
  }
}

}  // namespace
}  // namespace hybrid::test
