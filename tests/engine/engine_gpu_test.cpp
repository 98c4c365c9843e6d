// The engine on a real GPU (label gpu; every test skips without a usable CUDA
// device, and in CPU-only builds):
// - fp32: 5 training steps on CUDA give the CPU backend's losses within 1e-4
//   relative, step by step (TF32 is off: fp32 means fp32 on both);
// - bf16 and fp16 train: the loss on a fixed batch falls by more than 1 nat in
//   30 steps, with few fp16 overflow skips;
// - the offloaded optimizer (page-locked host memory, chunked async copies)
//   follows the on-device optimizer: weights within 1e-4 of max |w| after 5 steps;
// - the 1-bit optimizers follow the CPU backend's weights within 1e-4;
// - a real device out-of-memory becomes OutOfMemoryError naming the category;
// - CUPTI: a profiled step's kernels reach the tracer on GPU lanes attributed
//   to modules, and through hybrid's trainer they land in the run store;
// - wall_clock_breakdown's timers wait for the device; reduce_scatter false
//   trains as true on one rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <regex>

#include "engine/engine.h"
#include "engine/trainer.h"
#include "engine_test_util.h"
#include "kernels/registry.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

using engine::MemCategory;

std::string why_no_gpu() {
  try {
    kernels::make_backend("cuda", 0);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

#define SKIP_WITHOUT_GPU()                                       \
  do {                                                           \
    const std::string why = why_no_gpu();                        \
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

nlohmann::json small_gpt(const std::string& device,
                         const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json p = {
      {"train_micro_batch_size_per_gpu", 4},
      {"optimizer", {{"params", {{"lr", 1e-3}, {"weight_decay", 0.0}}}}},
      {"hybrid",
       {{"device", device},
        {"model",
         {{"n_layer", 2}, {"n_embd", 64}, {"n_head", 4}, {"vocab_size", 256}, {"seq_len", 64}}}}}};
  p.merge_patch(extra);
  return p;
}

std::unique_ptr<Engine> make(const nlohmann::json& patch) {
  auto cfg = test::tiny_config(patch);
  EngineOptions o;
  o.quiet = true;
  return initialize(cfg, make_model(cfg), std::move(o));
}

// Deterministic batches; `fixed` repeats the first one (a batch to memorise).
std::vector<float> run_steps(Engine& e, int steps, bool fixed) {
  const auto& cfg = e.config();
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    const size_t salt = fixed ? 0 : size_t(s) * 13;
    for (size_t i = 0; i < n; ++i) {
      in[i] = int32_t((i * 31 + salt) % size_t(cfg.model.vocab_size));
      tgt[i] = int32_t((i * 17 + salt + 3) % size_t(cfg.model.vocab_size));
    }
    losses.push_back(e.forward(in, tgt));
    e.backward();
    e.step();
  }
  return losses;
}

TEST(EngineGpu, Fp32StepsMatchTheCpuBackend) {
  SKIP_WITHOUT_GPU();
  auto gpu = make(small_gpt("cuda"));
  ASSERT_EQ(gpu->backend().kind(), kernels::BackendKind::cuda);
  EXPECT_EQ(gpu->communicator().name(), "nccl")
      << "device buffers go through NCCL, even on one rank";
  EXPECT_EQ(gpu->host_communicator().name(), "single");
  const auto lg = run_steps(*gpu, 5, false);
  auto cpu = make(small_gpt("cpu"));
  const auto lc = run_steps(*cpu, 5, false);
  for (size_t i = 0; i < lc.size(); ++i)
    EXPECT_NEAR(lg[i], lc[i], 1e-4 * std::abs(lc[i])) << "step " << i + 1;
  const auto wg = gpu->gather_parameters(), wc = cpu->gather_parameters();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < wc.size(); ++i)
    diff = std::max(diff, double(std::abs(wg[i] - wc[i]))),
    scale = std::max(scale, double(std::abs(wc[i])));
  EXPECT_LT(diff / scale, 1e-4) << "weights after 5 steps";
}

// The 1-bit optimizers step on the device (one GPU: their compressed average
// is the identity there, the momentum's mask applied; the exchange itself is
// checked against the CPU in cuda_sign_compression_gpu_test.cpp): 8 steps,
// compressing from step 5, give the CPU backend's weights within 1e-4 of max |w|.
TEST(EngineGpu, OneBitOptimizersFollowTheCpuBackend) {
  SKIP_WITHOUT_GPU();
  for (const std::string type : {"OneBitAdam", "ZeroOneAdam", "OneBitLamb"}) {
    const bool zero_one = type == "ZeroOneAdam";
    const nlohmann::json optimizer = {
        {"optimizer",
         {{"type", type},
          {"params", {{"lr", 1e-4}, {zero_one ? "var_freeze_step" : "freeze_step", 4}}}}}};
    auto gpu = make(small_gpt("cuda", optimizer));
    run_steps(*gpu, 8, false);
    auto cpu = make(small_gpt("cpu", optimizer));
    run_steps(*cpu, 8, false);
    const auto wg = gpu->gather_parameters(), wc = cpu->gather_parameters();
    double diff = 0, scale = 0;
    for (size_t i = 0; i < wc.size(); ++i)
      diff = std::max(diff, double(std::abs(wg[i] - wc[i]))),
      scale = std::max(scale, double(std::abs(wc[i])));
    EXPECT_LT(diff / scale, 1e-4) << type << ": weights after 8 steps";
  }
}

// wall_clock_breakdown on the device: each timer waits for the GPU, so the timers
// of a step add up to no more than its wall time (after a final sync) and each is
// > 0; reduce_scatter false (an in-place NCCL all-reduce of each bucket) trains
// exactly as reduce-scatter does on one rank.
TEST(EngineGpu, WallClockTimersWaitForTheDeviceAndAllReduceTrainsAlike) {
  SKIP_WITHOUT_GPU();
  auto patch = [](bool reduce_scatter) {
    return small_gpt("cuda",
                     {{"wall_clock_breakdown", true},
                      {"gradient_accumulation_steps", 2},
                      {"zero_optimization", {{"stage", 2}, {"reduce_scatter", reduce_scatter}}}});
  };
  auto rs = make(patch(true));
  auto ar = make(patch(false));
  std::vector<float> losses_rs, losses_ar;
  for (int step = 0; step < 4; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    for (float l : run_steps(*ar, 2, false)) losses_ar.push_back(l);
    ar->backend().synchronize();
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (float l : run_steps(*rs, 2, false)) losses_rs.push_back(l);
    const auto& t = ar->last_step_times();
    using engine::StepTimer;
    for (auto timer :
         {StepTimer::forward, StepTimer::backward, StepTimer::backward_inner,
          StepTimer::backward_allreduce, StepTimer::step, StepTimer::optimizer_gradients,
          StepTimer::optimizer_step, StepTimer::optimizer_allgather}) {
      EXPECT_TRUE(t.has(timer)) << engine::step_timer_name(timer);
      EXPECT_GT(t[timer], 0.0) << engine::step_timer_name(timer);
    }
    EXPECT_LE(t[StepTimer::forward] + t[StepTimer::backward] + t[StepTimer::step], wall_ms)
        << "step " << step + 1;
  }
  EXPECT_EQ(losses_ar, losses_rs);
  EXPECT_EQ(ar->gather_parameters(), rs->gather_parameters());
}

class EngineGpuLowPrecision : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineGpuLowPrecision, Trains) {
  SKIP_WITHOUT_GPU();
  const std::string dtype = GetParam();
  nlohmann::json extra = {{dtype, {{"enabled", true}}},
                          {"optimizer", {{"params", {{"lr", 3e-3}}}}},
                          {"zero_optimization", {{"stage", 2}}}};
  auto e = make(small_gpt("cuda", extra));
  const auto l = run_steps(*e, 30, true);
  for (float x : l) ASSERT_TRUE(std::isfinite(x) || dtype == "fp16");
  EXPECT_LT(l.back(), l.front() - 1.0f) << dtype << ": " << l.front() << " → " << l.back();
  EXPECT_LT(e->skipped_steps(), 10);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EngineGpuLowPrecision, ::testing::Values("bf16", "fp16"));

TEST(EngineGpu, OffloadedOptimizerFollowsTheOnDeviceOne) {
  SKIP_WITHOUT_GPU();
  const nlohmann::json base = {{"bf16", {{"enabled", true}}},
                               {"zero_optimization", {{"stage", 2}}}};
  nlohmann::json off = base;
  off["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  auto a = make(small_gpt("cuda", base));
  auto b = make(small_gpt("cuda", off));
  ASSERT_TRUE(b->zero().optimizer_offloaded());
  EXPECT_TRUE(b->host_allocator().pinned()) << "page-locked through cudaHostAlloc";
  EXPECT_EQ(b->allocator().stats().current[size_t(MemCategory::optimizer)], 0u);
  EXPECT_GT(b->host_allocator().stats().current[size_t(MemCategory::optimizer)], 0u);
  const auto la = run_steps(*a, 5, false), lb = run_steps(*b, 5, false);
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_NEAR(la[i], lb[i], 2e-3 * std::abs(la[i])) << "step " << i + 1;
  const auto wa = a->gather_parameters(), wb = b->gather_parameters();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < wa.size(); ++i)
    diff = std::max(diff, double(std::abs(wa[i] - wb[i]))),
    scale = std::max(scale, double(std::abs(wa[i])));
  EXPECT_LT(diff / scale, 1e-4) << "CPU AdamW vs CUDA AdamW, 5 steps";
}

// ZeRO-Infinity on a GPU: the stage-3 partition in page-locked host memory and
// in an NVMe swap file, each module's slice copied up (copy stream, events)
// before its in-place NCCL all-gather: the same host-side arithmetic as the
// offloaded optimizer without parameter offload, so bitwise the same run.
TEST(EngineGpu, OffloadedParametersFollowTheOffloadedOptimizerBitwise) {
  SKIP_WITHOUT_GPU();
  test::TempDir dir;
  nlohmann::json base = {{"bf16", {{"enabled", true}}},
                         {"zero_optimization",
                          {{"stage", 3},
                           {"stage3_param_persistence_threshold", 1000},
                           {"offload_optimizer", {{"device", "cpu"}, {"pin_memory", true}}}}}};
  auto ref = make(small_gpt("cuda", base));
  const auto lr = run_steps(*ref, 5, false);
  for (const char* device : {"cpu", "nvme"}) {
    nlohmann::json off = base;
    off["zero_optimization"]["offload_param"] = {
        {"device", device}, {"pin_memory", true}, {"nvme_path", dir.path().string()}};
    auto e = make(small_gpt("cuda", off));
    ASSERT_TRUE(e->zero().params_offloaded());
    EXPECT_TRUE(e->host_allocator().pinned());
    EXPECT_EQ(run_steps(*e, 5, false), lr) << device;
    EXPECT_EQ(e->gather_parameters(), ref->gather_parameters()) << device;
  }
}

TEST(EngineGpu, DeviceOutOfMemoryNamesTheCategory) {
  SKIP_WITHOUT_GPU();
  // 38.7 G parameters: 77 GB of bf16 weights fit an H200, the 155 GB fp32 master does not.
  nlohmann::json big = {{"bf16", {{"enabled", true}}},
                        {"train_micro_batch_size_per_gpu", 1},
                        {"hybrid",
                         {{"model",
                           {{"n_layer", 48},
                            {"n_embd", 8192},
                            {"n_head", 64},
                            {"vocab_size", 128},
                            {"seq_len", 16}}}}}};
  try {
    make(small_gpt("cuda", big));
    FAIL() << "expected OutOfMemoryError";
  } catch (const engine::OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(std::regex_search(
        msg, std::regex(" for (params|grads|master|optimizer) failed in device memory")))
        << msg;
    EXPECT_NE(msg.find("cuda:"), std::string::npos) << "the caching allocator's reason: " << msg;
  }
  // The device is usable afterwards: everything allocated before the failure was returned.
  auto e = make(small_gpt("cuda"));
  EXPECT_TRUE(std::isfinite(run_steps(*e, 1, true)[0]));
}

TEST(EngineGpu, CuptiKernelsOfAProfiledStepAreAttributedToModules) {
  SKIP_WITHOUT_GPU();
  auto e = make(small_gpt("cuda", {{"bf16", {{"enabled", true}}}}));
  run_steps(*e, 1, true);  // not profiled: nothing collected
  EXPECT_EQ(e->flush_gpu_activity(), 0u);
  e->tracer().set_enabled(true);
  run_steps(*e, 1, true);
  e->tracer().set_enabled(false);
  const size_t added = e->flush_gpu_activity();
  const auto events = e->tracer().drain();
  size_t kernels = 0, attributed = 0;
  for (const auto& ev : events) {
    if (ev.category != profiler::Category::kernel) continue;
    ++kernels;
    EXPECT_GE(ev.lane, profiler::kLaneGpuBase);
    if (ev.module_id >= 0) ++attributed;
  }
  EXPECT_GT(added, 0u);
  EXPECT_GT(kernels, 10u) << "a GPT-2 step launches dozens of kernels";
  EXPECT_GT(attributed * 2, kernels) << "most kernels run inside a module's scope";
}

TEST(EngineGpu, TrainerRecordsGpuKernelsInTheRunStore) {
  SKIP_WITHOUT_GPU();
  test::TempDir dir;
  auto cfg = test::tiny_config(small_gpt(
      "cuda", {{"bf16", {{"enabled", true}}}, {"hybrid", {{"profiler", {{"trace", true}}}}}}));
  TrainOptions opts;
  opts.steps = 4;
  opts.quiet = true;
  opts.db = dir / "runs.db";
  const auto s = run_training(cfg, opts);
  ASSERT_EQ(s.status, profiler::RunStatus::ok) << s.error;
  profiler::RunStore store(opts.db);
  const auto set = store.events(s.run_id);
  size_t kernels = 0, cpu = 0;
  for (const auto& ev : set.events) {
    if (ev.category == profiler::Category::kernel) ++kernels;
    if (ev.category == profiler::Category::forward) ++cpu;
  }
  EXPECT_GT(kernels, 10u);
  EXPECT_GT(cpu, 0u);
  // The GPU timeline of the profiled step: one row for the rank, a breakdown that
  // adds up, and layer rows whose times are device times (host times kept apart).
  const auto gpu = store.gpu_timeline(s.run_id);
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_GT(gpu[0].compute_ns, 0);
  EXPECT_EQ(gpu[0].idle_ns + gpu[0].compute_ns + gpu[0].non_compute_ns, gpu[0].span_ns);
  int64_t device_ns = 0, host_ns = 0;
  for (const auto& l : store.layer_stats(s.run_id)) {
    device_ns += l.fwd_ns + l.bwd_ns;
    host_ns += l.host_fwd_ns + l.host_bwd_ns;
  }
  EXPECT_GT(device_ns, 0);
  EXPECT_GT(host_ns, 0);
  EXPECT_NE(device_ns, host_ns);
  const auto steps = store.step_ranks(s.run_id);
  ASSERT_FALSE(steps.empty());
  for (const auto& r : steps) EXPECT_LE(r.exposed_comm_ms, r.comm_ms + 1e-9);
}

}  // namespace
}  // namespace hybrid
