// GPU activity parsing and attribution with synthetic CUPTI-like
// records (runs on any machine), plus the collector's and NVTX factory's
// behaviour in this build (inert without a GPU, never crashing).
#include "profiler/gpu_activity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/gpu_hooks.h"
#include "tests/profiler/gpu_records.h"

#if HYBRID_HAVE_CUPTI
#include <cuda_runtime_api.h>
#endif

namespace hybrid::profiler {
namespace {

using test::Names;

GpuActivityRecord kernel(uint32_t stream, uint64_t start, uint64_t end, uint32_t corr,
                         std::string name = "k") {
  return test::gpu_record(GpuActivityKind::kernel, stream, start, end, corr, std::move(name));
}

TEST(GpuActivity, ExternalIdRoundTripsEveryField) {
  const std::vector<ScopeTag> tags = {{-1, Category::step, -1},
                                      {0, Category::forward, 0},
                                      {41, Category::backward, 7},
                                      {2147483646, Category::optimizer, 123456},
                                      {5, Category::comm, -1}};
  for (const ScopeTag& t : tags) {
    const uint64_t id = encode_external_id(t);
    EXPECT_EQ(decode_external_id(id), t) << "module " << t.module_id << " step " << t.step;
  }
  // Distinct scopes get distinct ids.
  EXPECT_NE(encode_external_id({1, Category::forward, 3}),
            encode_external_id({1, Category::backward, 3}));
  EXPECT_NE(encode_external_id({1, Category::forward, 3}),
            encode_external_id({1, Category::forward, 4}));
  // A category byte beyond the enum is not one of ours.
  EXPECT_THROW(decode_external_id(uint64_t(200) << 32), std::invalid_argument);
}

TEST(GpuActivity, ShortKernelNameDemanglesAndDropsSignature) {
  EXPECT_EQ(short_kernel_name("_ZN2ns6kernelIfEEvPT_i"), "ns::kernel<float>");
  EXPECT_EQ(short_kernel_name("_ZN2ns12_GLOBAL__N_12k2EPf"), "ns::(anonymous namespace)::k2");
  // cuBLAS-style C names and already readable names pass through.
  EXPECT_EQ(short_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32"),
            "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(short_kernel_name("_Znot_really_mangled"), "_Znot_really_mangled");
}

TEST(GpuActivity, MemcpyNamesFollowCuptiKinds) {
  EXPECT_EQ(memcpy_name(1), "memcpy HtoD");
  EXPECT_EQ(memcpy_name(2), "memcpy DtoH");
  EXPECT_EQ(memcpy_name(8), "memcpy DtoD");
  EXPECT_EQ(memcpy_name(10), "memcpy PtoP");
  EXPECT_EQ(memcpy_name(0), "memcpy");
}

TEST(GpuActivity, BufferPoolIsBoundedAndCountsExhaustion) {
  ActivityBufferPool pool(2, 4000);
  EXPECT_EQ(pool.buffer_bytes(), 4000u);
  uint8_t* a = pool.acquire();
  uint8_t* b = pool.acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
  EXPECT_EQ(pool.in_use(), 2u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.exhausted(), 2u);
  pool.release(a);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.acquire(), a);  // the freed buffer is handed out again
  uint8_t foreign[16];
  EXPECT_THROW(pool.release(foreign), std::invalid_argument);
  pool.release(b);
  EXPECT_THROW(pool.release(b), std::invalid_argument);
  EXPECT_THROW(ActivityBufferPool(0, 4096), std::invalid_argument);
}

TEST(GpuActivity, ParserSortsShiftsAssignsLanesAndAttributes) {
  GpuActivityParser p;
  // Delivered out of order, on two streams; stream 7 starts first.
  p.add_record(kernel(3, 300, 350, 12, "_ZN2ns6kernelIfEEvPT_i"));
  p.add_record(kernel(7, 100, 180, 10, "gemm"));
  p.add_record(test::gpu_record(GpuActivityKind::memcpy, 7, 200, 260, 11, "memcpy HtoD", 4096));
  p.add_external_correlation({10, encode_external_id({4, Category::forward, 2})});
  p.add_external_correlation({11, encode_external_id({4, Category::forward, 2})});
  p.add_external_correlation({12, encode_external_id({9, Category::backward, 2})});

  Names names;
  const int64_t offset = 1'000'000;
  auto ev = p.take_events(names.fn(), offset);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].start_ns, 100 + offset);
  EXPECT_EQ(ev[1].start_ns, 200 + offset);
  EXPECT_EQ(ev[2].start_ns, 300 + offset);
  EXPECT_EQ(ev[0].dur_ns, 80);
  EXPECT_EQ(ev[2].dur_ns, 50);
  // Lanes by first appearance in time: stream 7, then stream 3.
  EXPECT_EQ(ev[0].lane, kLaneGpuBase);
  EXPECT_EQ(ev[1].lane, kLaneGpuBase);
  EXPECT_EQ(ev[2].lane, kLaneGpuBase + 1);
  EXPECT_EQ(ev[0].category, Category::kernel);
  EXPECT_EQ(ev[1].category, Category::memcpy);
  EXPECT_EQ(ev[1].bytes, 4096u);
  EXPECT_EQ(ev[0].module_id, 4);
  EXPECT_EQ(ev[1].module_id, 4);
  EXPECT_EQ(ev[2].module_id, 9);
  EXPECT_EQ(ev[2].step, 2);
  EXPECT_EQ(names.names[ev[0].name_id], "gemm");
  EXPECT_EQ(names.names[ev[2].name_id], "ns::kernel<float>");
  const auto s = p.stats();
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.events, 3u);
  EXPECT_EQ(s.attributed, 3u);
  EXPECT_EQ(s.unattributed, 0u);
  EXPECT_EQ(s.pending, 0u);
  EXPECT_EQ(p.stream_count(), 2u);

  // Lanes are stable across calls: stream 3 keeps its lane, a new stream gets the next.
  p.add_record(kernel(5, 400, 410, 13));
  p.add_record(kernel(3, 420, 430, 14));
  p.add_external_correlation({13, encode_external_id({1, Category::forward, 3})});
  p.add_external_correlation({14, encode_external_id({1, Category::forward, 3})});
  ev = p.take_events(names.fn(), 0);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].lane, kLaneGpuBase + 2);
  EXPECT_EQ(ev[1].lane, kLaneGpuBase + 1);
}

TEST(GpuActivity, UnknownCorrelationWaitsOnceThenIsUnattributed) {
  GpuActivityParser p;
  Names names;
  p.add_record(kernel(1, 10, 20, 100));  // correlation arrives in a later buffer
  p.add_record(kernel(1, 30, 40, 200));  // correlation never arrives
  EXPECT_TRUE(p.take_events(names.fn(), 0).empty());
  EXPECT_EQ(p.stats().pending, 2u);
  p.add_external_correlation({100, encode_external_id({6, Category::forward, 0})});
  auto ev = p.take_events(names.fn(), 0);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].module_id, 6);
  EXPECT_EQ(ev[1].module_id, -1);
  EXPECT_EQ(p.stats().attributed, 1u);
  EXPECT_EQ(p.stats().unattributed, 1u);

  // final=true emits unknown ones at once.
  p.add_record(kernel(1, 50, 60, 300));
  ev = p.take_events(names.fn(), 0, /*final=*/true);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].module_id, -1);
  EXPECT_EQ(p.stats().pending, 0u);

  // An id that is not ours (bad category byte) counts as unattributed.
  p.add_record(kernel(1, 70, 80, 400));
  p.add_external_correlation({400, uint64_t(250) << 32});
  ev = p.take_events(names.fn(), 0);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].module_id, -1);
  EXPECT_EQ(p.stats().unattributed, 3u);
}

TEST(GpuActivity, DroppedCountsAccumulateAndCorrelationsAreBounded) {
  GpuActivityParser p(/*max_correlations=*/3);
  p.add_dropped(5);
  p.add_dropped(7);
  EXPECT_EQ(p.stats().dropped, 12u);
  for (uint32_t c = 1; c <= 5; ++c)
    p.add_external_correlation({c, encode_external_id({int32_t(c), Category::forward, 0})});
  EXPECT_EQ(p.stats().evicted, 2u);  // 1 and 2 were the oldest
  Names names;
  p.add_record(kernel(1, 10, 20, 1));
  p.add_record(kernel(1, 30, 40, 5));
  auto ev = p.take_events(names.fn(), 0, true);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].module_id, -1);  // evicted
  EXPECT_EQ(ev[1].module_id, 5);
}

bool cuda_device_present() {
#if HYBRID_HAVE_CUPTI
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#else
  return false;
#endif
}

TEST(GpuHooks, CollectorIsInertWithAReasonWithoutAGpu) {
  if (cuda_device_present()) GTEST_SKIP() << "a GPU is present: covered by cupti_gpu_test";
  Tracer tracer;
  tracer.set_enabled(true);
  auto collector = make_cupti_collector(tracer);
  ASSERT_NE(collector, nullptr);
  EXPECT_FALSE(collector->available());
  EXPECT_EQ(collector->status().rfind("CUPTI unavailable: ", 0), 0u) << collector->status();
#if HYBRID_HAVE_CUPTI
  EXPECT_NE(collector->status().find("cuptiActivityEnable"), std::string::npos)
      << collector->status();
#endif
  tracer.add_listener(collector.get());
  { Scope s(&tracer, tracer.intern("fwd"), Category::forward, 3); }
  EXPECT_EQ(collector->flush(true), 0u);
  EXPECT_EQ(tracer.drain().size(), 1u);  // only the CPU scope
}

TEST(GpuHooks, NvtxListenerExistsExactlyInCudaBuilds) {
  auto nvtx = make_nvtx_listener();
#if HYBRID_HAVE_CUPTI
  ASSERT_NE(nvtx, nullptr);
  // Without an attached tool NVTX is a no-op; balanced push/pop must not fail.
  Tracer tracer;
  tracer.set_enabled(true);
  tracer.add_listener(nvtx.get());
  {
    Scope step(&tracer, tracer.intern("step"), Category::step);
    Scope fwd(&tracer, tracer.intern("h0.attn"), Category::forward, 2);
  }
  EXPECT_EQ(tracer.drain().size(), 2u);
#else
  EXPECT_EQ(nvtx, nullptr);
#endif
}

TEST(GpuHooks, InertCollectorReportsItsStatus) {
  auto c = make_inert_collector("CUPTI unavailable: test");
  EXPECT_FALSE(c->available());
  EXPECT_EQ(c->status(), "CUPTI unavailable: test");
  EXPECT_EQ(c->flush(false), 0u);
  EXPECT_EQ(c->stats().records, 0u);
}

}  // namespace
}  // namespace hybrid::profiler
