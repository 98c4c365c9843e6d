// The live CUPTI collector on a real GPU: memset/memcpy activity inside a module
// scope comes back as events attributed to that module, on a GPU lane, with
// bytes and times on the tracer's clock. Skips without a device or in CPU builds.
#include <gtest/gtest.h>

#include <vector>

#include "profiler/gpu_hooks.h"

#if HYBRID_HAVE_CUPTI
#include <cuda_runtime_api.h>
#endif

namespace hybrid::profiler {
namespace {

TEST(CuptiCollector, AttributesCopiesToTheEnclosingModule) {
#if !HYBRID_HAVE_CUPTI
  GTEST_SKIP() << "CPU-only build";
#else
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
  Tracer tracer;
  tracer.set_enabled(true);
  tracer.set_step(4);
  auto collector = make_cupti_collector(tracer);
  ASSERT_TRUE(collector->available()) << collector->status();
  // CUPTI's callbacks are process-global: a second collector stays inert.
  auto second = make_cupti_collector(tracer);
  EXPECT_FALSE(second->available());
  EXPECT_NE(second->status().find("another collector"), std::string::npos) << second->status();
  tracer.add_listener(collector.get());

  const size_t bytes = size_t(1) << 20;
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
  std::vector<char> host(bytes, 1);
  const int64_t before = tracer.now_ns();
  {
    Scope s(&tracer, tracer.intern("block3.mlp"), Category::forward, 7);
    ASSERT_EQ(cudaMemset(dev, 0, bytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int64_t after = tracer.now_ns();
  EXPECT_GE(collector->flush(true), 2u);
  cudaFree(dev);

  const auto events = tracer.drain();
  bool memset_seen = false, memcpy_seen = false;
  for (const Event& e : events) {
    if (e.category != Category::memcpy) continue;
    const std::string name = tracer.name(e.name_id);
    EXPECT_GE(e.lane, kLaneGpuBase);
    // Shifted onto the tracer clock: inside the window (1 ms of slack for the offset estimate).
    EXPECT_GE(e.start_ns, before - 1'000'000) << name;
    EXPECT_LE(e.start_ns + e.dur_ns, after + 1'000'000) << name;
    if (name == "memset") {
      memset_seen = true;
      EXPECT_EQ(e.bytes, bytes);
      EXPECT_EQ(e.module_id, 7);
      EXPECT_EQ(e.step, 4);
    }
    if (name == "memcpy HtoD") {
      memcpy_seen = true;
      EXPECT_EQ(e.bytes, bytes);
      EXPECT_EQ(e.module_id, 7);
    }
  }
  EXPECT_TRUE(memset_seen);
  EXPECT_TRUE(memcpy_seen);
  EXPECT_EQ(collector->stats().dropped, 0u);
  EXPECT_GE(collector->stats().attributed, 2u);
#endif
}

}  // namespace
}  // namespace hybrid::profiler
