// The engine's GPU integration, checked on the host with a device stand-in
// (tests/engine/device_double.h: CPU ops, bookkept and cappable "device"
// memory):
// - a backend running out of memory becomes OutOfMemoryError naming the
//   category, the size and the backend's reason, for device and host memory;
// - optimizer offload makes a model fit a device it does not fit otherwise;
// - the two communicators: every collective on host values goes to the host
//   communicator, every collective on device buffers to the device one;
// - backend selection through the real hybrid-train: "auto" says what it chose
//   once, "cuda" without a GPU fails with status "failed" and the reason.
#include <gtest/gtest.h>

#include <regex>

#include "checked_communicator.h"
#include "device_double.h"
#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"
#include "kernels/registry.h"
#include "tests/common/error_of.h"

namespace hybrid {
namespace {

using engine::MemCategory;

TEST(DeviceMemory, BackendOutOfMemoryBecomesOutOfMemoryErrorNamingTheCategory) {
  test::DeviceDouble device(4096);
  engine::TrackingAllocator alloc(device, 0);  // no budget: the device itself runs out
  const auto a = test::one_buffer(alloc, 3000, MemCategory::params);
  const auto e = test::thrown<engine::OutOfMemoryError>(
      [&] { test::one_buffer(alloc, 2000, MemCategory::optimizer); });
  ASSERT_TRUE(e) << "expected OutOfMemoryError";
  EXPECT_EQ(e->category(), MemCategory::optimizer);
  EXPECT_EQ(e->requested(), 2000u);
  const std::string msg = e->what();
  EXPECT_NE(msg.find("out of memory: allocating 1.95 KiB for optimizer failed in device memory"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("2.93 KiB in use by this rank"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device double: 2000 bytes requested, 1096 free"), std::string::npos) << msg;
  EXPECT_EQ(alloc.stats().total_current, 3000u) << "the failed allocation left nothing behind";
  EXPECT_EQ(alloc.stats().current[size_t(MemCategory::optimizer)], 0u);
  EXPECT_EQ(device.in_use(), 3000u);
}

TEST(DeviceMemory, PinnedHostMemoryRefusedBecomesOutOfMemoryErrorToo) {
  auto cpu = kernels::make_cpu_backend();
  test::DeviceDouble device(0, 1000);
  engine::TrackingAllocator host(*cpu, device, 0);
  EXPECT_TRUE(host.host_memory());
  EXPECT_TRUE(host.pinned());
  const auto e = test::thrown<engine::OutOfMemoryError>(
      [&] { test::one_buffer(host, 2000, MemCategory::master); });
  ASSERT_TRUE(e) << "expected OutOfMemoryError";
  EXPECT_EQ(e->category(), MemCategory::master);
  const std::string msg = e->what();
  EXPECT_NE(msg.find("for master failed in host memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot pin 2000 host bytes"), std::string::npos) << msg;
  const auto c = test::one_buffer(
      host, 800,
      MemCategory::optimizer);  // within the limit: works, zeroed by the CPU backend
  EXPECT_EQ(c.view(0).as<unsigned char>()[799], 0);
  EXPECT_FALSE(device.owns(c.view(0).data())) << "host memory is not device memory";
}

// The device holds the model with offload but not without: the engine run
// without offload fails with OutOfMemoryError naming the category whose
// allocation crossed the capacity, the offloaded one trains.
TEST(DeviceMemory, OffloadFitsWhereTheOnDeviceOptimizerDoesNot) {
  nlohmann::json p = {{"bf16", {{"enabled", true}}},
                      {"zero_optimization", {{"stage", 1}}},
                      {"optimizer", {{"params", {{"lr", 1e-2}}}}}};
  auto on = test::tiny_config(p);
  p["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  auto off = test::tiny_config(p);
  test::DeviceDouble probe;
  const uint64_t need_on = engine::predict_memory(on, 1, probe).total();
  const uint64_t need_off = engine::predict_memory(off, 1, probe).total();
  ASSERT_LT(need_off + 4096, need_on);
  const size_t capacity = size_t(need_off + (need_on - need_off) / 2);

  EngineOptions a;
  a.quiet = true;
  a.backend = std::make_unique<test::DeviceDouble>(capacity);
  try {
    initialize(on, make_model(on), std::move(a));
    FAIL() << "expected OutOfMemoryError";
  } catch (const engine::OutOfMemoryError& e) {
    EXPECT_TRUE(std::regex_search(
        std::string(e.what()),
        std::regex(" for (params|grads|master|optimizer|activations|comm) failed in device "
                   "memory with .* in use by this rank \\(device double: ")))
        << e.what();
    EXPECT_EQ(std::string(e.what()).find(std::string(engine::mem_category_name(e.category()))),
              std::string(e.what()).find(" for ") + 5);
  }

  EngineOptions b;
  b.quiet = true;
  auto device = std::make_unique<test::DeviceDouble>(capacity);
  const auto* dev = device.get();
  b.backend = std::move(device);
  auto e = initialize(off, make_model(off), std::move(b));
  EXPECT_TRUE(e->host_allocator().pinned())
      << "pin_memory: from the device backend's allocate_host";
  const size_t n = size_t(off.train_micro_batch_size_per_gpu) * off.model.seq_len;
  std::vector<int32_t> in(n, 3), tgt(n, 5);
  const float first = e->forward(in, tgt);
  for (int s = 0; s < 5; ++s) {
    e->backward();
    e->step();
    e->forward(in, tgt);
  }
  EXPECT_LT(e->forward(in, tgt), first - 0.5f) << "it trains within the device's capacity";
  EXPECT_LE(dev->in_use(), capacity);
}

// ---- host and device communicators ---------------------------------------------------

class TwoCommunicators : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(TwoCommunicators, HostValuesGoToTheHostOneDeviceBuffersToTheDeviceOne) {
  const auto [stage, offload] = GetParam();
  nlohmann::json p = {
      {"bf16", {{"enabled", true}}},
      {"zero_optimization", {{"stage", stage}, {"stage3_param_persistence_threshold", 200}}}};
  if (offload) p["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  auto cfg = test::tiny_config(p);
  auto host_inner = engine::comm::make_single_communicator();
  auto device_inner = engine::comm::make_single_communicator();

  auto device = std::make_unique<test::DeviceDouble>();
  const test::DeviceDouble* dev = device.get();
  auto host_comm = std::make_unique<test::CheckedCommunicator>(
      *host_inner, "host communicator got device memory:", [dev](const void* q, size_t) {
        return !dev->owns(q);
      });
  auto device_comm = std::make_unique<test::CheckedCommunicator>(
      *device_inner, "device communicator got host memory:", [dev](const void* q, size_t bytes) {
        return dev->owns(q, bytes);
      });
  const auto* host_view = host_comm.get();
  const auto* device_view = device_comm.get();
  EngineOptions o;
  o.quiet = true;
  o.backend = std::move(device);
  o.communicator = std::move(host_comm);
  o.device_communicator = std::move(device_comm);
  auto e = initialize(cfg, make_model(cfg), std::move(o));
  EXPECT_EQ(&e->communicator(), device_view);
  EXPECT_EQ(&e->host_communicator(), host_view);

  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n, 1), tgt(n, 2);
  for (int s = 0; s < 2; ++s) {
    e->forward(in, tgt);
    e->backward();
    e->step();
  }
  EXPECT_EQ(e->mean_over_ranks(2.5), 2.5);
  EXPECT_EQ(e->broadcast_from_rank0(42), 42);
  EXPECT_EQ(e->all_gather_floats({1.0f, 2.0f}), (std::vector<float>{1.0f, 2.0f}));
  test::TempDir dir;
  e->save_checkpoint(dir.path().string(), "t");
  e->load_checkpoint(dir.path().string());
  const auto w = e->gather_parameters();
  EXPECT_EQ(w.size(), size_t(e->param_count()));

  for (const auto& v : host_view->violations()) ADD_FAILURE() << v;
  for (const auto& v : device_view->violations()) ADD_FAILURE() << v;
  using K = profiler::CollectiveKind;
  // Gradients: all-reduced at stage 0, reduce-scattered above; ZeRO-3 gathers parameters.
  if (stage == 0) {
    EXPECT_GT(device_view->calls(K::all_reduce), 0u);
  }
  if (stage > 0) {
    EXPECT_GT(device_view->calls(K::reduce_scatter), 0u);
  }
  if (stage == 3) {
    EXPECT_GT(device_view->calls(K::all_gather), 0u);
  }
  // Checkpoint failure flags and barriers are host values.
  EXPECT_GE(host_view->calls(K::all_reduce), 1u);
  EXPECT_GE(host_view->calls(K::barrier), 1u);
  EXPECT_EQ(device_view->calls(K::barrier), 0u);
  EXPECT_EQ(device_view->calls(K::broadcast), 0u);
}

INSTANTIATE_TEST_SUITE_P(StagesAndOffload, TwoCommunicators,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3), ::testing::Bool()));

TEST(TwoCommunicatorsCheck, DisagreeingCommunicatorsAreRefused) {
  // A device communicator claiming another world: a wiring error caught at once.
  class WorldOfTwo final : public engine::comm::Communicator {
   public:
    int rank() const override { return 0; }
    int world_size() const override { return 2; }
    std::string name() const override { return "fake"; }
    engine::comm::HandlePtr all_reduce_async(void*, size_t, kernels::DType,
                                             engine::comm::ReduceOp) override {
      return nullptr;
    }
    engine::comm::HandlePtr reduce_scatter_async(const void*, void*, const std::vector<size_t>&,
                                                 kernels::DType, engine::comm::ReduceOp) override {
      return nullptr;
    }
    engine::comm::HandlePtr all_gather_async(const void*, void*, const std::vector<size_t>&,
                                             kernels::DType) override {
      return nullptr;
    }
    engine::comm::HandlePtr broadcast_async(void*, size_t, int) override { return nullptr; }
    engine::comm::HandlePtr barrier_async() override { return nullptr; }
    engine::comm::HandlePtr all_to_all_async(const void*, void*, size_t) override {
      return nullptr;
    }
  };
  auto cfg = test::tiny_config();
  EngineOptions o;
  o.quiet = true;
  o.communicator = engine::comm::make_single_communicator();
  o.device_communicator = std::make_unique<WorldOfTwo>();
  try {
    initialize(cfg, make_model(cfg), std::move(o));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "device communicator (fake, rank 0 of 2) and the host communicator "
                  "(single, rank 0 of 1) disagree"),
              std::string::npos)
        << e.what();
  }
}

// ---- backend selection through hybrid-train -------------------------------------------

bool cuda_device_usable() {
  try {
    kernels::make_backend("cuda", 0);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

TEST(DeviceSelection, CudaWithoutAGpuFailsWithTheReason) {
  if (cuda_device_usable()) GTEST_SKIP() << "a CUDA device is present";
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config_json({{"hybrid", {{"device", "cuda"}}}}));
  const auto r = test::run_command(test::tool("hybrid-train") + " --config " + (dir / "cfg.json") +
                                   " --steps 2 --result " + (dir / "r.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(
                "hybrid-train: device \"cuda\" was requested but no CUDA device is available ("),
            std::string::npos)
      << r.output;
  const auto res = test::read_json(dir / "r.json");
  EXPECT_EQ(res.at("status"), "failed");
  const std::string msg = res.at("error").at("message");
  EXPECT_NE(msg.find(kernels::cuda_backend_compiled() ? "cudaGetDeviceCount"
                                                      : "this build has no CUDA backend"),
            std::string::npos)
      << msg;
}

TEST(DeviceSelection, AutoSaysWhatItChoseOnceAcrossRanks) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config_json({{"hybrid", {{"device", "auto"}}}}));
  const auto r = test::run_command(test::launcher(2) + test::tool("hybrid-train") + " --config " +
                                   (dir / "cfg.json") + " --steps 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t count = 0;
  for (size_t at = r.output.find("device auto: "); at != std::string::npos;
       at = r.output.find("device auto: ", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << r.output;
  if (!cuda_device_usable()) {
    EXPECT_NE(r.output.find("; using the CPU backend"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace hybrid
