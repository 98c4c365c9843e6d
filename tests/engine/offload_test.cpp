// The offloaded optimizer (zero_optimization.offload_optimizer.device "cpu")
// against the on-device one. On the CPU backend the offload path is the one a
// GPU runs (chunked gradient download, AdamW on the host copies, parameter
// upload), with host-to-host copies, so it is checked here:
// - the chunked pipeline equals one AdamW over the whole range, bitwise;
// - the same tiny GPT-2 trained with and without offload ends with bitwise
//   identical master weights and losses: stages 0–3, fp32/bf16 (and fp16 with
//   loss scaling) in one process, stages 1–3 on 2 ranks under mpirun hybrid-train;
// - checkpoints round-trip with offload, and load across offload/no offload;
// - the memory model predicts device memory without master weights and moments
//   and host memory with them, byte for byte.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/gpt2.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine/zero/optimizer_offload.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::MemCategory;
using kernels::DType;

using test::quiet;
using test::run_hybrid_train;

nlohmann::json patch_for(int stage, const std::string& dtype, bool offload) {
  nlohmann::json p = test::zero_training_patch(stage, dtype);
  if (offload) p["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  return p;
}

// ---- the pipeline alone --------------------------------------------------------

struct HostArrays {
  std::vector<float> master, state, grad_f32;
};

HostArrays random_arrays(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  HostArrays a;
  a.master.resize(n), a.state.resize(2 * n), a.grad_f32.resize(n);
  for (auto& x : a.master) x = 0.1f * g(rng);
  for (size_t i = 0; i < n; ++i)
    a.state[i] = 0.01f * g(rng), a.state[n + i] = 1e-4f * std::abs(g(rng));
  for (auto& x : a.grad_f32) x = g(rng);
  return a;
}

TEST(OptimizerOffload, ChunksAreMultiplesOfTheCpuBlockAndBounded) {
  for (int64_t n :
       {int64_t(1), int64_t(2047), int64_t(20000), int64_t(124) << 20, int64_t(1) << 40}) {
    const int64_t c = engine::OptimizerOffload::chunk_elements(n);
    EXPECT_EQ(c % 2048, 0) << n;
    EXPECT_GE(c, 2048) << n;
    EXPECT_LE(c, int64_t(4) << 20) << n;
    if (n >= 4 * 2048 && n <= (int64_t(16) << 20)) {
      EXPECT_GE(c * 4, n) << "at most four chunks below 16 Mi: " << n;
    }
  }
  const auto b = engine::OptimizerOffload::host_bytes(20000, 2, DType::bf16, DType::bf16);
  EXPECT_EQ(b.master, 80000u);
  EXPECT_EQ(b.optimizer, 160000u);
  EXPECT_EQ(b.staging, 2u * 6144u * 2u + 2u * 6144u * 2u);  // 4 chunks of 6144: two slots each way
}

// Three chunked steps (4 chunks, the last one short) against AdamW over the
// whole range: master, moments and working parameters bitwise equal.
TEST(OptimizerOffload, ChunkedStepsEqualWholeRangeAdamW) {
  const size_t n = 20000;
  for (DType pdt : {DType::f32, DType::bf16}) {
    for (DType gdt : {DType::f32, DType::bf16}) {
      auto device = kernels::make_cpu_backend();
      auto host_be = kernels::make_cpu_backend();
      engine::TrackingAllocator host(*host_be, *host_be, 0);
      engine::OptimizerConfig oc;
      oc.lr = 1e-2f;
      oc.weight_decay = 0.1f;
      auto opt = engine::make_adam(oc);

      const auto a = random_arrays(n, 3);
      std::vector<std::byte> grad(n * kernels::dtype_size(gdt));
      device->convert(gdt, grad.data(), DType::f32, a.grad_f32.data(), n);

      // Reference: the on-device layout, one call.
      auto ref_master = a.master, ref_state = a.state;
      std::vector<std::byte> ref_params(n * kernels::dtype_size(pdt));
      // Offload: device params receive what the host computed.
      engine::OptimizerOffload off(int64_t(n), 2, gdt, pdt, *device, host);
      ASSERT_EQ(off.chunk(), 6144);
      std::vector<std::byte> params(n * kernels::dtype_size(pdt));
      engine::DeviceParams dest(*device, params.data());
      off.load(a.master.data(), a.state.data(), dest);
      EXPECT_EQ(off.master(), a.master);
      EXPECT_EQ(off.state(), a.state) << "global state layout survives the chunk-major storage";

      for (int step = 1; step <= 3; ++step) {
        engine::OptimizerStepArgs r;
        r.lr = 1e-2f;
        r.step = step;
        r.grad_dtype = gdt;
        r.grad = grad.data();
        r.grad_scale = 0.5f;
        r.master = ref_master.data();
        r.state = ref_state.data();
        r.param_dtype = pdt;
        r.param_out = pdt == DType::f32 ? nullptr : ref_params.data();
        r.n = n;
        opt->step(*device, r);

        engine::OptimizerStepArgs s;
        s.lr = 1e-2f;
        s.step = step;
        s.grad_scale = 0.5f;
        off.step(*opt, s, grad.data(), dest, [](std::vector<double>&) {});
      }
      const std::string what = std::string(kernels::dtype_name(pdt)) + " params, " +
                               std::string(kernels::dtype_name(gdt)) + " grads";
      EXPECT_EQ(off.master(), ref_master) << what;
      EXPECT_EQ(off.state(), ref_state) << what;
      if (pdt == DType::f32) {
        EXPECT_EQ(0, std::memcmp(params.data(), ref_master.data(), n * 4)) << what;
      } else {
        EXPECT_EQ(params, ref_params) << what;
      }
      EXPECT_NE(off.master(), a.master) << "the steps changed the weights";
      // Host memory: master, moments and two staging slots each way (16-bit params).
      const auto hb = engine::OptimizerOffload::host_bytes(int64_t(n), 2, gdt, pdt);
      const auto st = host.stats();
      EXPECT_EQ(st.current[size_t(MemCategory::master)], hb.master);
      EXPECT_EQ(st.current[size_t(MemCategory::optimizer)], hb.optimizer);
      EXPECT_EQ(st.current[size_t(MemCategory::comm)], hb.staging);
    }
  }
}

// ---- whole training, one process -------------------------------------------------

class OffloadTraining : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(OffloadTraining, MatchesTheOnDeviceOptimizerBitwise) {
  const auto [stage, dtype] = GetParam();
  auto on_device = test::tiny_config(patch_for(stage, dtype, false));
  auto offloaded = test::tiny_config(patch_for(stage, dtype, true));
  auto a = initialize(on_device, make_model(on_device), quiet());
  auto b = initialize(offloaded, make_model(offloaded), quiet());
  EXPECT_FALSE(a->zero().optimizer_offloaded());
  ASSERT_TRUE(b->zero().optimizer_offloaded());
  const auto la = test::train_on_changing_batches(*a, 4),
             lb = test::train_on_changing_batches(*b, 4);
  EXPECT_EQ(la, lb);
  const auto wa = a->gather_parameters(), wb = b->gather_parameters();
  EXPECT_EQ(wa, wb) << "final fp32 master weights";
  EXPECT_NE(wa, initialize(on_device, make_model(on_device), quiet())->gather_parameters())
      << "it trained";
  EXPECT_EQ(a->skipped_steps(), b->skipped_steps());
  EXPECT_EQ(a->loss_scale(), b->loss_scale());
}

INSTANTIATE_TEST_SUITE_P(StagesAndDtypes, OffloadTraining,
                         ::testing::Values(std::tuple{0, "fp32"}, std::tuple{1, "fp32"},
                                           std::tuple{2, "fp32"}, std::tuple{3, "fp32"},
                                           std::tuple{0, "bf16"}, std::tuple{1, "bf16"},
                                           std::tuple{2, "bf16"}, std::tuple{3, "bf16"},
                                           std::tuple{2, "fp16"}));

// Device: no master weights, no moments, everything else as without offload.
// Host: master weights, moments and the transfer staging. Both exact.
class OffloadMemory : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(OffloadMemory, ModelPredictsDeviceAndHostBytesExactly) {
  const auto [stage, dtype] = GetParam();
  auto cfg = test::tiny_config(patch_for(stage, dtype, true));
  auto base = test::tiny_config(patch_for(stage, dtype, false));
  auto e = initialize(cfg, make_model(cfg), quiet());
  auto ref = initialize(base, make_model(base), quiet());
  e->allocator().reset_peaks();
  e->host_allocator().reset_peaks();
  ref->allocator().reset_peaks();
  test::train_on_changing_batches(*e, 2);
  test::train_on_changing_batches(*ref, 2);
  const auto dev = e->allocator().stats(), host = e->host_allocator().stats(),
             dev_ref = ref->allocator().stats();
  const auto pred = engine::predict_memory(cfg, 1, e->backend());
  const auto pred_ref = engine::predict_memory(base, 1, ref->backend());
  for (int c = 0; c < engine::kMemCategoryCount; ++c) {
    const auto cat = MemCategory(c);
    const std::string name(engine::mem_category_name(cat));
    EXPECT_EQ(host.peak[size_t(c)], pred.host[size_t(c)]) << "host " << name;
    if (cat == MemCategory::master || cat == MemCategory::optimizer) {
      EXPECT_EQ(dev.peak[size_t(c)], 0u) << "device " << name;
      EXPECT_EQ(pred.bytes[size_t(c)], 0u) << "device " << name;
    } else {
      EXPECT_EQ(dev.peak[size_t(c)], dev_ref.peak[size_t(c)])
          << "device " << name << " as without offload";
      EXPECT_EQ(pred.bytes[size_t(c)], pred_ref.bytes[size_t(c)]) << "device " << name;
    }
  }
  // The optimizer's range: everything at stage 0, the (one-rank) shard otherwise.
  const uint64_t n_opt = uint64_t(e->zero().optimizer_range().size());
  EXPECT_EQ(host.peak[size_t(MemCategory::master)], n_opt * 4);
  EXPECT_EQ(host.peak[size_t(MemCategory::optimizer)], n_opt * 8);
  EXPECT_EQ(pred.host_total(), host.total_peak);
  EXPECT_EQ(pred.total() + pred.host[size_t(MemCategory::master)] +
                pred.host[size_t(MemCategory::optimizer)],
            pred_ref.total() + (dtype == "fp32" ? n_opt * 4 : 0))
      << "offload moves the master (a new host copy for fp32 parameters) and the moments";
  EXPECT_FALSE(e->host_allocator().pinned()) << "pin_memory is off by default";
}

INSTANTIATE_TEST_SUITE_P(StagesAndDtypes, OffloadMemory,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values("fp32", "bf16")));

TEST(OffloadCheckpoint, RoundTripsWithOffloadAndAcrossIt) {
  test::TempDir dir;
  auto off = test::tiny_config(patch_for(2, "bf16", true));
  auto on = test::tiny_config(patch_for(2, "bf16", false));
  auto full = initialize(off, make_model(off), quiet());
  const auto all = test::train_on_changing_batches(*full, 6);

  auto first = initialize(off, make_model(off), quiet());
  test::train_on_changing_batches(*first, 3);
  first->save_checkpoint(dir.path().string(), "mid");

  // Offload → offload.
  auto second = initialize(off, make_model(off), quiet());
  EXPECT_EQ(second->load_checkpoint(dir.path().string()), "mid");
  const auto rest = test::train_on_changing_batches(*second, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rest[size_t(i)], all[size_t(3 + i)]) << "step " << 4 + i;
  EXPECT_EQ(second->gather_parameters(), full->gather_parameters());

  // Offload → on device: the checkpoint format does not depend on where the state lived.
  auto third = initialize(on, make_model(on), quiet());
  third->load_checkpoint(dir.path().string());
  const auto rest_on = test::train_on_changing_batches(*third, 3);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(rest_on[size_t(i)], all[size_t(3 + i)]) << "on device, step " << 4 + i;
  EXPECT_EQ(third->gather_parameters(), full->gather_parameters());

  // On device → offload.
  test::TempDir dir2;
  third->save_checkpoint(dir2.path().string(), "end");
  auto fourth = initialize(off, make_model(off), quiet());
  fourth->load_checkpoint(dir2.path().string());
  EXPECT_EQ(fourth->gather_parameters(), full->gather_parameters());
  EXPECT_EQ(fourth->global_step(), 6);
}

// ---- two ranks, the real hybrid-train ----------------------------------------------

TEST(OffloadMpi, TwoRanksMatchTheOnDeviceOptimizerBitwiseAndMemoryAsPredicted) {
  test::TempDir dir;
  for (int stage : {1, 2, 3}) {
    for (std::string dtype : {"bf16", "fp32"}) {
      if (dtype == "fp32" && stage != 2) continue;
      const std::string tag = fmt::format("s{}{}", stage, dtype);
      const auto a = run_hybrid_train(dir, tag + "dev", 2, patch_for(stage, dtype, false),
                                      "--quiet --steps 6");
      const auto b =
          run_hybrid_train(dir, tag + "off", 2, patch_for(stage, dtype, true), "--quiet --steps 6");
      ASSERT_EQ(a.exit_code, 0) << a.output;
      ASSERT_EQ(b.exit_code, 0) << b.output;
      EXPECT_EQ(a.result.at("losses"), b.result.at("losses")) << tag;
      ASSERT_EQ(a.weights.size(), b.weights.size());
      EXPECT_TRUE(a.weights == b.weights) << tag << ": final fp32 weights differ";

      const auto& peak = b.result.at("peak_memory_bytes");
      EXPECT_EQ(peak.at("master"), 0) << tag;
      EXPECT_EQ(peak.at("optimizer"), 0) << tag;
      ASSERT_TRUE(b.result.contains("peak_host_memory_bytes")) << b.result.dump();
      EXPECT_FALSE(a.result.contains("peak_host_memory_bytes")) << "no offload, no host memory";
      const auto& host = b.result.at("peak_host_memory_bytes");
      const auto& pred = b.result.at("predicted_host_memory_bytes");
      for (auto it = host.begin(); it != host.end(); ++it)
        EXPECT_EQ(it.value(), pred.at(it.key())) << tag << ", host " << it.key();
      // Each rank keeps its half of the master weights and moments.
      engine::GPT2 model(test::tiny_config().model, test::tiny_config().padded_vocab());
      const uint64_t shard = uint64_t((engine::ModuleTree(model).param_count() + 1) / 2);
      EXPECT_EQ(host.at("master").get<uint64_t>(), shard * 4) << tag;
      EXPECT_EQ(host.at("optimizer").get<uint64_t>(), shard * 8) << tag;
      // Same collectives, same bytes: the offload adds host copies, no communication.
      EXPECT_EQ(a.result.at("comm_bytes_per_step"), b.result.at("comm_bytes_per_step")) << tag;
    }
  }
}

TEST(OffloadMpi, ResumesBitwiseFromAnOffloadedCheckpointOnTwoRanks) {
  test::TempDir dir;
  const auto patch = patch_for(3, "bf16", true);
  const auto full = run_hybrid_train(dir, "full", 2, patch, "--quiet --steps 6");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const std::string ckpt = dir / "ckpt";
  const auto first = run_hybrid_train(dir, "first", 2, patch, "--quiet --steps 3 --save " + ckpt);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = run_hybrid_train(dir, "second", 2, patch, "--quiet --steps 3 --load " + ckpt);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto a = full.result.at("losses").get<std::vector<double>>();
  const auto b = second.result.at("losses").get<std::vector<double>>();
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(b[i], a[3 + i]) << "step " << 4 + i;
  EXPECT_TRUE(second.weights == full.weights);
}

TEST(OffloadMpi, SaysWhatOffloadDoesOnTheCpuBackend) {
  test::TempDir dir;
  nlohmann::json patch = patch_for(3, "bf16", true);
  patch["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  const auto r = run_hybrid_train(dir, "say", 1, patch, "--steps 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(
                "zero_optimization.offload_optimizer: fp32 master weights and AdamW state of this "
                "rank's partition"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("live in pageable host memory"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("zero_optimization.offload_param: this rank's partition of bf16 "
                          "parameters"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("lives in pageable host memory; each module's slice is fetched before "
                          "its all-gather"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("not implemented"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no effect"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak host memory per rank (offload): params"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace hybrid
