// The GPU-timeline analysis on synthetic records with known answers: the
// temporal breakdown, overlap, exclusive kinds of work (also against a
// nanosecond bitmap on random records), per-module device time, step accounting,
// and the whole path a CUDA run takes: CUPTI-like records through the real
// parser (buffers out of order, late correlations, dropped records), then the analysis.
#include "profiler/gpu_timeline.h"

#include <gtest/gtest.h>

#include <random>

#include "profiler/gpu_activity.h"
#include "tests/profiler/gpu_records.h"

namespace hybrid::profiler {
namespace {

constexpr uint16_t kStreamA = kLaneGpuBase, kStreamB = kLaneGpuBase + 1;

struct Builder {
  EventSet set;
  uint32_t name(const std::string& n) {
    for (size_t i = 0; i < set.names.size(); ++i)
      if (set.names[i] == n) return uint32_t(i);
    set.names.push_back(n);
    return uint32_t(set.names.size() - 1);
  }
  Event& add(Category c, const std::string& n, uint16_t lane, int64_t start, int64_t end,
             int32_t module = -1, Category scope = Category::other, int32_t step = -1,
             int rank = 0) {
    Event e;
    e.category = c;
    e.name_id = name(n);
    e.lane = lane;
    e.start_ns = start;
    e.dur_ns = end - start;
    e.module_id = module;
    e.scope = scope;
    e.step = step;
    e.rank = uint16_t(rank);
    set.events.push_back(e);
    return set.events.back();
  }
};

// Stream A: gemm [0,100), gemm [300,400). Stream B: NCCL [50,250), memcpy [380,450).
Builder two_streams() {
  Builder b;
  b.add(Category::kernel, "sm90_gemm", kStreamA, 0, 100);
  b.add(Category::kernel, "sm90_gemm", kStreamA, 300, 400);
  b.add(Category::kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", kStreamB, 50, 250);
  b.add(Category::memcpy, "memcpy DtoH", kStreamB, 380, 450);
  b.add(Category::forward, "h.0.attn", kLaneCompute, -1000, 5000, 1);  // CPU: not GPU work
  return b;
}

TEST(GpuTimeline, ClassifiesByCategoryAndName) {
  EXPECT_EQ(classify_gpu_record(Category::kernel, "ncclKernel_AllReduce_RING_LL_Sum_float"),
            GpuWork::communication);
  EXPECT_EQ(classify_gpu_record(Category::kernel, "void NCCLx::send<float>"),
            GpuWork::communication);
  EXPECT_EQ(classify_gpu_record(Category::kernel, "rcclKernel_Reduce"), GpuWork::communication);
  EXPECT_EQ(classify_gpu_record(Category::kernel, "volta_sgemm_64x64_nt"), GpuWork::computation);
  EXPECT_EQ(classify_gpu_record(Category::memcpy, "Memcpy DtoD"), GpuWork::memory);
  EXPECT_EQ(classify_gpu_record(Category::memcpy, "nccl staging memcpy"), GpuWork::memory);
  EXPECT_EQ(gpu_work_mask_name(0), "idle");
  EXPECT_EQ(gpu_work_mask_name(3), "computation + communication");
  EXPECT_EQ(gpu_work_mask_name(7), "computation + communication + memory");
}

TEST(GpuTimeline, TemporalBreakdownOverlapAndExclusiveKindsOfKnownLayout) {
  const Builder b = two_streams();
  const auto all = analyze_gpu_timeline(b.set.events, b.set.names);
  ASSERT_EQ(all.size(), 1u);
  const GpuRankTimeline& t = all[0];
  EXPECT_EQ(t.first_start_ns, 0);
  EXPECT_EQ(t.last_end_ns, 450);
  EXPECT_EQ(t.span_ns, 450);
  EXPECT_EQ(t.idle_ns, 50);          // [250,300)
  EXPECT_EQ(t.compute_ns, 200);      // [0,100) + [300,400)
  EXPECT_EQ(t.non_compute_ns, 200);  // [100,250) + [400,450)
  EXPECT_EQ(t.comm_ns, 200);
  EXPECT_EQ(t.memory_ns, 70);
  EXPECT_EQ(t.comm_overlap_ns, 50);  // [50,100)
  EXPECT_EQ(t.exposed_comm_ns, 150);
  ASSERT_TRUE(t.comm_comp_overlap_pct().has_value());
  EXPECT_DOUBLE_EQ(*t.comm_comp_overlap_pct(), 25.0);
  EXPECT_NEAR(t.pct(t.idle_ns), 100.0 * 50 / 450, 1e-12);
  const std::array<int64_t, kGpuWorkMasks> expected = {50, 130, 150, 50, 50, 20, 0, 0};
  EXPECT_EQ(t.exclusive_ns, expected);
  EXPECT_EQ(t.computation_kernels, 2u);
  EXPECT_EQ(t.communication_kernels, 1u);
  EXPECT_EQ(t.memory_records, 1u);
}

TEST(GpuTimeline, NoCommunicationMeansNoOverlapFigure) {
  Builder b;
  b.add(Category::kernel, "gemm", kStreamA, 10, 20);
  const auto t = analyze_gpu_timeline(b.set.events, b.set.names);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0].comm_comp_overlap_pct().has_value());
  EXPECT_EQ(t[0].idle_ns, 0);
  EXPECT_TRUE(analyze_gpu_timeline({}, {}).empty());
}

// Random records on three streams and two ranks against a per-nanosecond bitmap.
TEST(GpuTimeline, MatchesANanosecondBitmapOnRandomRecords) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    Builder b;
    const char* names[] = {"gemm", "ncclKernel_AllGather", "copy"};
    for (int i = 0; i < 40; ++i) {
      const int kind = int(rng() % 3);
      const int64_t s = int64_t(rng() % 2000), d = int64_t(rng() % 150);
      b.add(kind == 2 ? Category::memcpy : Category::kernel, names[kind],
            uint16_t(kLaneGpuBase + rng() % 3), s, s + d, -1, Category::other, -1, int(rng() % 2));
    }
    for (const GpuRankTimeline& t : analyze_gpu_timeline(b.set.events, b.set.names)) {
      std::vector<int> mask(2200, 0);
      int64_t first = INT64_MAX, last = INT64_MIN;
      for (const Event& e : b.set.events) {
        if (e.rank != t.rank) continue;
        first = std::min(first, e.start_ns);
        last = std::max(last, e.start_ns + e.dur_ns);
        const int bit = 1 << int(classify_gpu_record(e.category, b.set.names[e.name_id]));
        for (int64_t x = e.start_ns; x < e.start_ns + e.dur_ns; ++x) mask[size_t(x)] |= bit;
      }
      std::array<int64_t, kGpuWorkMasks> expected{};
      for (int64_t x = first; x < last; ++x) ++expected[size_t(mask[size_t(x)])];
      EXPECT_EQ(t.exclusive_ns, expected) << "trial " << trial << " rank " << t.rank;
      EXPECT_EQ(t.span_ns, last - first);
      EXPECT_EQ(t.compute_ns, expected[1] + expected[3] + expected[5] + expected[7]);
      EXPECT_EQ(t.comm_overlap_ns, expected[3] + expected[7]);
      EXPECT_EQ(t.idle_ns + t.compute_ns + t.non_compute_ns, t.span_ns);
    }
  }
}

// model(0) ← block(1) ← attn(2); records launched in attn's forward and block's backward.
std::vector<ModuleInfo> three_modules() {
  return {{0, -1, "model", "GPT2", 0, 0, 0},
          {1, 0, "h.0", "Block", 1, 0, 0},
          {2, 1, "h.0.attn", "Attention", 2, 0, 0}};
}

TEST(GpuTimeline, DeviceTimePerModuleIsInclusiveAndSplitByLaunchingScope) {
  Builder b;
  b.add(Category::kernel, "gemm", kStreamA, 0, 10, 2, Category::forward, 3);
  b.add(Category::kernel, "gemm", kStreamB, 5, 12, 2, Category::forward, 3);  // concurrent: summed
  b.add(Category::kernel, "gemm_dgrad", kStreamA, 20, 40, 1, Category::backward, 3);
  b.add(Category::memcpy, "memcpy", kStreamA, 40, 43, 0, Category::optimizer, 3);
  b.add(Category::kernel, "orphan", kStreamA, 50, 60);  // no module: left out
  b.add(Category::forward, "h.0.attn", kLaneCompute, 0, 100, 2, Category::other, 3);  // CPU
  const auto rows = device_time_by_module(b.set.events, three_modules());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2], (ModuleDeviceTime{0, 3, 2, 17, 0, 0, 2}));
  EXPECT_EQ(rows[1], (ModuleDeviceTime{0, 3, 1, 17, 20, 0, 1}));
  EXPECT_EQ(rows[0], (ModuleDeviceTime{0, 3, 0, 17, 20, 3, 1}));
}

TEST(GpuTimeline, StepAccountingPerStepAndRank) {
  Builder b = two_streams();
  for (Event& e : b.set.events) e.step = 1;
  b.add(Category::kernel, "gemm", kStreamA, 1000, 1100, -1, Category::other, 2);
  b.add(Category::kernel, "ncclKernel", kStreamB, 1050, 1300, -1, Category::other, 2);
  const auto rows = gpu_step_accounting(b.set.events, b.set.names);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (StepRankRow{1, 0, 200e-6, 200e-6, 150e-6}));
  EXPECT_EQ(rows[1], (StepRankRow{2, 0, 100e-6, 250e-6, 200e-6}));
}

TEST(GpuTimeline, DeviceTimesReplaceHostTimesWhichStayAsLaunchTimes) {
  std::vector<LayerStat> rows(1);
  rows[0].module_id = 2;
  rows[0].step = 3;
  rows[0].fwd_ns = 4;  // host: the launches took 4 ns
  rows[0].bwd_ns = 6;
  rows[0].fwd_flops = 1000;
  const std::vector<ModuleDeviceTime> device = {{0, 3, 2, 170, 0, 0, 2}, {0, 3, 0, 17, 20, 3, 1}};
  apply_device_times(rows, device);
  ASSERT_EQ(rows.size(), 2u);  // module 0 had no host row: it gets one
  EXPECT_EQ(rows[0].module_id, 0);
  EXPECT_EQ(rows[0].fwd_ns, 17);
  EXPECT_EQ(rows[0].bwd_ns, 20);
  EXPECT_EQ(rows[1].module_id, 2);
  EXPECT_EQ(rows[1].fwd_ns, 170);
  EXPECT_EQ(rows[1].bwd_ns, 0);
  EXPECT_EQ(rows[1].host_fwd_ns, 4);
  EXPECT_EQ(rows[1].host_bwd_ns, 6);
  EXPECT_EQ(rows[1].fwd_flops, 1000u);
}

TEST(GpuTimeline, TopKernelsByTotalDeviceTime) {
  Builder b = two_streams();
  const auto top = top_gpu_kernels(b.set, 0, 2);
  ASSERT_EQ(top.size(), 2u);
  // 200 ns each: ties break by name.
  EXPECT_EQ(top[0].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(top[0].work, GpuWork::communication);
  EXPECT_EQ(top[0].total_ns, 200);
  EXPECT_EQ(top[1].name, "sm90_gemm");
  EXPECT_EQ(top[1].count, 2u);
  EXPECT_EQ(top[1].total_ns, 200);
  EXPECT_EQ(top[1].max_ns, 100);
  EXPECT_TRUE(top_gpu_kernels(b.set, 1, 5).empty());
}

// What a CUDA run records: CUPTI buffers through the real parser, then the analysis.
// Buffers arrive out of order, a correlation arrives after its record, CUPTI reports
// dropped records, and two streams overlap.
TEST(GpuTimeline, CuptiRecordStreamThroughTheParserGivesExactFigures) {
  GpuActivityParser parser;
  test::Names names;
  const auto intern = names.fn();
  const uint64_t base = 1'000'000;
  // Buffer 2 (later records) is delivered first.
  parser.add_record(
      test::gpu_record(GpuActivityKind::kernel, 14, base + 300, base + 400, 4, "_Z4gemmPfS_"));
  parser.add_record(
      test::gpu_record(GpuActivityKind::memcpy, 15, base + 380, base + 450, 5, "memcpy DtoH"));
  parser.add_external_correlation({4, encode_external_id({2, Category::backward, 7})});
  parser.add_dropped(3);
  auto first = parser.take_events(intern, -int64_t(base));  // record 5 waits for its correlation
  // Buffer 1, and the correlations of both buffers.
  parser.add_record(
      test::gpu_record(GpuActivityKind::kernel, 14, base + 0, base + 100, 1, "_Z4gemmPfS_"));
  parser.add_record(test::gpu_record(GpuActivityKind::kernel, 15, base + 50, base + 250, 2,
                                     "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"));
  parser.add_external_correlation({1, encode_external_id({2, Category::forward, 7})});
  parser.add_external_correlation({2, encode_external_id({1, Category::backward, 7})});
  parser.add_external_correlation({5, encode_external_id({0, Category::optimizer, 7})});
  auto rest = parser.take_events(intern, -int64_t(base), /*final=*/true);
  std::vector<Event> events = first;
  events.insert(events.end(), rest.begin(), rest.end());
  ASSERT_EQ(events.size(), 4u);
  const auto stats = parser.stats();
  EXPECT_EQ(stats.dropped, 3u);
  EXPECT_EQ(stats.attributed, 4u);
  EXPECT_EQ(stats.pending, 0u);

  const auto t = analyze_gpu_timeline(events, names.names);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].span_ns, 450);
  EXPECT_EQ(t[0].idle_ns, 50);
  EXPECT_EQ(t[0].compute_ns, 200);
  EXPECT_EQ(t[0].exposed_comm_ns, 150);
  EXPECT_DOUBLE_EQ(*t[0].comm_comp_overlap_pct(), 25.0);

  const auto modules = device_time_by_module(events, three_modules());
  ASSERT_EQ(modules.size(), 3u);
  EXPECT_EQ(modules[2], (ModuleDeviceTime{0, 7, 2, 100, 100, 0, 2}));   // attn: fwd gemm, bwd gemm
  EXPECT_EQ(modules[1], (ModuleDeviceTime{0, 7, 1, 100, 300, 0, 1}));   // + the reduce-scatter
  EXPECT_EQ(modules[0], (ModuleDeviceTime{0, 7, 0, 100, 300, 70, 1}));  // + the optimizer copy
  const auto steps = gpu_step_accounting(events, names.names);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0], (StepRankRow{7, 0, 200e-6, 200e-6, 150e-6}));
}

}  // namespace
}  // namespace hybrid::profiler
