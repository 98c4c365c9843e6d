// The view-models on real PyTorch traces imported by the real hybrid-prof
// (tests/gui/imported_db.h). Expected figures come from SQL on the file (a path
// independent of the store's readers and the view-models) and, for the GPU
// timeline, from HolisticTraceAnalysis 0.5.0 on the same traces.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "gui/model/database.h"
#include "gui/model/gpu_summary.h"
#include "gui/model/layer_breakdown.h"
#include "gui/model/timeline_model.h"
#include "tests/gui/imported_db.h"

namespace hybrid::gui {
namespace {

using profiler::test::query_sql;

constexpr double kUsTol = 1e-6;    // µs from integer ns
constexpr double kMsTol = 1e-6;    // ms from integer ns, means of two ranks
constexpr double kHtaTol = 0.005;  // HTA's figures are printed to 2 decimals

double sql_num(const std::filesystem::path& db, const std::string& sql) {
  const std::string v = query_sql(db, sql);
  return v.empty() || v == "NULL" ? 0.0 : std::stod(v);
}

class ImportedRun : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& d = test::imported_db();
    HYBRID_REQUIRE_BUILT_DB(d);
    path_ = d.path;
    run_ = d.trace_filter_run;
    Database db(path_);
    ASSERT_TRUE(db.is_open()) << db.error();
    auto data = db.load_run(run_);
    ASSERT_TRUE(data.has_value()) << db.error();
    data_ = std::move(*data);
  }
  // "… WHERE run_id = <run> AND <cond>"
  double sql(const std::string& select_from, const std::string& cond) const {
    return sql_num(path_, select_from + " WHERE run_id = " + std::to_string(run_) + " AND " + cond);
  }
  // "<select> FROM layer_stats WHERE run_id = <run> AND <cond>" for the module named `module`
  double layer_sql(const std::string& select, const std::string& cond,
                   const std::string& module) const {
    return sql(select + " FROM layer_stats",
               cond + " AND module_id = (SELECT module_id FROM modules WHERE run_id = " +
                   std::to_string(run_) + " AND name = '" + module + "')");
  }

  std::filesystem::path path_;
  int64_t run_ = 0;
  RunData data_;
};

TEST_F(ImportedRun, GpuSummaryEqualsTheStoredAnalysis) {
  const GpuSummary s = build_gpu_summary(data_.profile, data_.events);
  EXPECT_EQ(s.source, "kineto");
  EXPECT_FALSE(s.from_events);
  ASSERT_EQ(double(s.ranks.size()), sql("SELECT COUNT(*) FROM gpu_timeline", "1"));
  ASSERT_EQ(s.ranks.size(), 2u);
  const char* kinds[] = {nullptr,
                         "computation_only_ns",
                         "communication_only_ns",
                         "computation_communication_ns",
                         "memory_only_ns",
                         "computation_memory_ns",
                         "communication_memory_ns",
                         "all_three_ns"};
  for (const GpuRankSummary& r : s.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r.rank));
    auto col = [&](const std::string& c) {
      return sql("SELECT " + c + " FROM gpu_timeline", "rank = " + std::to_string(r.rank)) / 1e3;
    };
    EXPECT_NEAR(r.span_us, col("last_end_ns - first_start_ns"), kUsTol);
    EXPECT_NEAR(r.idle_us, col("idle_ns"), kUsTol);
    EXPECT_NEAR(r.compute_us, col("compute_ns"), kUsTol);
    EXPECT_NEAR(r.non_compute_us, col("non_compute_ns"), kUsTol);
    EXPECT_NEAR(r.comm_us, col("comm_ns"), kUsTol);
    EXPECT_NEAR(r.exposed_comm_us, col("comm_ns - comm_overlap_ns"), kUsTol);
    ASSERT_TRUE(r.overlap_pct.has_value());
    EXPECT_NEAR(*r.overlap_pct, 100.0 * col("comm_overlap_ns") / col("comm_ns"), 1e-9);
    EXPECT_NEAR(r.idle_pct, 100.0 * r.idle_us / r.span_us, 1e-9);
    EXPECT_NEAR(r.idle_pct + r.compute_pct + r.non_compute_pct, 100.0, 1e-9);
    double kinds_us = r.idle_us;
    for (const GpuKindShare& k : r.kinds) {
      EXPECT_NEAR(k.us, col(kinds[k.mask]), kUsTol) << k.name;
      EXPECT_EQ(k.name, profiler::gpu_work_mask_name(k.mask));
      kinds_us += k.us;
    }
    EXPECT_NEAR(kinds_us, r.span_us, kUsTol);  // the exclusive kinds and idle tile the span
  }
  // HolisticTraceAnalysis 0.5.0 on the same files (tests/profiler/data/kineto/README.md).
  const double hta[2][4] = {{53.56, 17.71, 28.74, 11.81}, {54.72, 22.57, 22.72, 20.05}};
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(s.ranks[size_t(i)].idle_pct, hta[i][0], kHtaTol);
    EXPECT_NEAR(s.ranks[size_t(i)].compute_pct, hta[i][1], kHtaTol);
    EXPECT_NEAR(s.ranks[size_t(i)].non_compute_pct, hta[i][2], kHtaTol);
    EXPECT_NEAR(*s.ranks[size_t(i)].overlap_pct, hta[i][3], kHtaTol);
  }
}

TEST_F(ImportedRun, TopKernelsAreTheTracesKernels) {
  const GpuSummary s = build_gpu_summary(data_.profile, data_.events, 5);
  ASSERT_EQ(s.ranks.size(), 2u);
  const auto& top = s.ranks[0].top_kernels;
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(top[0].work, profiler::GpuWork::communication);
  EXPECT_EQ(top[0].name.rfind("ncclKernel_SendRecv", 0), 0u) << top[0].name;
  std::string quoted;  // an SQL string literal
  for (char c : top[0].name) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  const std::string same_name =
      "rank = 0 AND lane >= 8 AND name_id IN (SELECT id FROM event_names WHERE name = '" + quoted +
      "')";
  EXPECT_EQ(double(top[0].count), sql("SELECT COUNT(*) FROM events", same_name));
  EXPECT_EQ(double(top[0].total_ns), sql("SELECT SUM(dur_ns) FROM events", same_name));
  for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].total_ns, top[i].total_ns);
}

TEST(GpuSummary, SaysWhenARunHasNoGpuRecords) {
  test::FixtureDb fx;
  Database db(fx.path);
  auto cpu = db.load_run(fx.sweep.runs.at(0).run_id);
  ASSERT_TRUE(cpu.has_value()) << db.error();
  EXPECT_FALSE(build_gpu_summary(cpu->profile, cpu->events).has_gpu());
  // GPU records stored without the analysis (a run of an older schema): analysed from them.
  auto gpu = db.load_run(fx.gpu_run.run_id);
  ASSERT_TRUE(gpu.has_value()) << db.error();
  ASSERT_TRUE(gpu->profile.gpu.empty());
  const GpuSummary s = build_gpu_summary(gpu->profile, gpu->events);
  ASSERT_TRUE(s.has_gpu());
  EXPECT_TRUE(s.from_events);
  EXPECT_GT(s.ranks[0].compute_us, 0);
  EXPECT_FALSE(s.ranks[0].overlap_pct.has_value());  // no communication kernels
}

TEST_F(ImportedRun, LayerBreakdownShowsDeviceTimes) {
  // Step rows come from the ProfilerStep annotations of the first rank.
  ASSERT_EQ(data_.profile.steps.size(), 2u);
  EXPECT_EQ(data_.profile.steps[0].step, 551);
  const LayerBreakdown b = build_layer_breakdown(data_.profile, data_.events);
  EXPECT_TRUE(b.device_times);
  EXPECT_TRUE(b.host_differs);
  EXPECT_EQ(b.profiled_steps, (std::vector<int64_t>{551, 552}));
  EXPECT_EQ(b.step, 551);  // 552 is cut off: its records were dropped (HTA's rule)
  EXPECT_EQ(b.ranks, (std::vector<int>{0, 1}));
  EXPECT_FALSE(b.has_events);  // host optimizer scopes and waits are not device time
  auto layer_avg = [&](const std::string& column, const std::string& module) {
    return sql_num(path_,
                   "SELECT AVG(l." + column +
                       ") / 1e6 FROM layer_stats l JOIN modules m ON "
                       "m.run_id = l.run_id AND m.module_id = l.module_id WHERE l.run_id = " +
                       std::to_string(run_) + " AND l.step = 551 AND m.name = '" + module + "'");
  };
  const int ddp = b.find_name("DistributedDataParallel.forward");
  ASSERT_GE(ddp, 0);
  const LayerRow& fwd = b.rows[size_t(ddp)];
  EXPECT_NEAR(fwd.fwd_ms.mean, layer_avg("fwd_ns", fwd.name), kMsTol);
  EXPECT_NEAR(fwd.host_fwd_ms.mean, layer_avg("host_fwd_ns", fwd.name), kMsTol);
  EXPECT_GT(fwd.fwd_ms.mean, 90.0);
  EXPECT_EQ(fwd.bwd_ms.mean, 0.0);
  const int all_reduce = b.find_name("nccl:all_reduce");  // a root with backward only
  ASSERT_GE(all_reduce, 0);
  EXPECT_EQ(b.rows[size_t(all_reduce)].fwd_ms.mean, 0.0);
  EXPECT_NEAR(b.rows[size_t(all_reduce)].bwd_ms.mean, layer_avg("bwd_ns", "nccl:all_reduce"),
              kMsTol);
  EXPECT_NEAR(b.rows[size_t(all_reduce)].bwd_ms.max,
              layer_sql("SELECT MAX(bwd_ns) / 1e6", "step = 551", "nccl:all_reduce"), kMsTol);
  // The step: the ProfilerStep#551 events (mean over ranks); the rows add up to it.
  EXPECT_TRUE(b.step_measured);
  EXPECT_NEAR(b.step_ms.mean,
              sql("SELECT AVG(dur_ns) / 1e6 FROM events", "step = 551 AND category = 0"), kMsTol);
  double sum = 0, shares = 0;
  for (int r : b.top_rows) {
    EXPECT_NE(b.rows[size_t(r)].kind, LayerRowKind::optimizer);
    sum += b.rows[size_t(r)].total_ms.mean;
    shares += b.rows[size_t(r)].share;
  }
  EXPECT_NEAR(sum, b.step_ms.mean, kMsTol);
  EXPECT_NEAR(shares, 1.0, 1e-9);
  EXPECT_GE(b.find_name("other"), 0);
}

TEST_F(ImportedRun, CutOffStepHasHostTimesOnly) {
  LayerOptions o;
  o.step = 552;
  o.rank = 1;
  const LayerBreakdown b = build_layer_breakdown(data_.profile, data_.events, o);
  EXPECT_EQ(b.ranks, (std::vector<int>{1}));
  EXPECT_EQ(b.ranks_with_stats, (std::vector<int>{0, 1}));
  const int fwd = b.find_name("## forward ##");
  ASSERT_GE(fwd, 0);
  EXPECT_EQ(b.rows[size_t(fwd)].fwd_ms.mean, 0.0);
  EXPECT_NEAR(b.rows[size_t(fwd)].host_fwd_ms.mean,
              layer_sql("SELECT host_fwd_ns / 1e6", "step = 552 AND rank = 1", "## forward ##"),
              kMsTol);
  o.rank = 5;  // a rank of the job that was not traced
  EXPECT_THROW(build_layer_breakdown(data_.profile, data_.events, o), std::invalid_argument);
}

// Without events and step rows nothing measured the step: it is the sum of the rows.
TEST_F(ImportedRun, WithoutAMeasuredStepTheStepIsTheSumOfTheRows) {
  profiler::RunProfile unmeasured = data_.profile;
  unmeasured.steps.clear();
  const LayerBreakdown b = build_layer_breakdown(unmeasured, profiler::EventSet{});
  EXPECT_FALSE(b.step_measured);
  EXPECT_LT(b.find_name("other"), 0);
  double sum = 0;
  for (int r : b.top_rows) {
    EXPECT_EQ(b.rows[size_t(r)].kind, LayerRowKind::module);
    sum += b.rows[size_t(r)].total_ms.mean;
  }
  EXPECT_GT(sum, 100.0);
  EXPECT_NEAR(b.step_ms.mean, sum, kMsTol);
}

TEST(LayerBreakdown, CopesWithLayerRowsOfStepMinusOne) {
  profiler::RunProfile p;
  p.run.backend = "cuda";
  p.modules = {{0, -1, "## forward ##", "scope", 0, 0, 0},
               {1, 0, "Model.forward", "scope", 1, 0, 0}};
  p.layers = {{0, 0, -1, 3'000'000, 0, 0, 0, 0, 0, 1, 5'000'000, 0},
              {0, 1, -1, 2'000'000, 0, 0, 0, 0, 0, 1, 4'000'000, 0}};
  const LayerBreakdown b = build_layer_breakdown(p, {});
  EXPECT_TRUE(b.has_stats());
  EXPECT_EQ(b.step, -1);
  ASSERT_EQ(b.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(b.rows[1].fwd_ms.mean, 2.0);
  EXPECT_DOUBLE_EQ(b.rows[1].host_fwd_ms.mean, 4.0);
  EXPECT_DOUBLE_EQ(b.step_ms.mean, 3.0);
  EXPECT_TRUE(b.host_differs);
  EXPECT_FALSE(build_layer_breakdown(profiler::RunProfile{}, {}).has_stats());
}

TEST_F(ImportedRun, TimelineHasTheTracesGpuStreams) {
  const TimelineModel m = build_timeline(data_.events, data_.profile.ranks);
  EXPECT_TRUE(m.clocks_aligned);
  std::set<int> streams;
  for (const TimelineLane& lane : m.lanes) {
    EXPECT_NE(lane.kind, LaneKind::comm);  // no collectives: NCCL is kernels on GPU streams
    if (lane.kind != LaneKind::gpu || lane.rank != 0) continue;
    streams.insert(lane.gpu_stream);
    EXPECT_EQ(lane.label, "rank 0 · GPU stream " + std::to_string(lane.gpu_stream));
    size_t events = 0;
    for (const auto& row : lane.rows) events += row.events.size();
    EXPECT_EQ(double(events), sql("SELECT COUNT(*) FROM events",
                                  "rank = 0 AND lane = " +
                                      std::to_string(profiler::kLaneGpuBase + lane.gpu_stream)));
  }
  EXPECT_TRUE(streams.count(7) && streams.count(23)) << streams.size();
  EXPECT_EQ(double(streams.size()),
            sql("SELECT COUNT(DISTINCT lane) FROM events", "rank = 0 AND lane >= 8"));
  // One profiler step: its events only; the cut-off step has no GPU records left.
  const TimelineModel s551 = build_timeline(data_.events, data_.profile.ranks, 551);
  for (const auto& e : s551.events) EXPECT_EQ(e.step, 551);
  EXPECT_EQ(double(s551.events.size()), sql("SELECT COUNT(*) FROM events", "step = 551"));
  const TimelineModel s552 = build_timeline(data_.events, data_.profile.ranks, 552);
  EXPECT_GT(s552.events.size(), 0u);
  for (const auto& lane : s552.lanes) EXPECT_NE(lane.kind, LaneKind::gpu);
}

// Records outside every ProfilerStep have step -1: shown with all steps, or as a step of their own.
TEST(TimelineModel, EventsOfStepMinusOne) {
  profiler::EventSet set;
  set.names = {"ProfilerStep#551", "kernel", "warmup kernel"};
  auto ev = [](int64_t start, int64_t dur, uint32_t name, int32_t step, uint16_t lane,
               profiler::Category c) {
    profiler::Event e;
    e.start_ns = start;
    e.dur_ns = dur;
    e.name_id = name;
    e.step = step;
    e.lane = lane;
    e.category = c;
    return e;
  };
  const uint16_t stream7 = profiler::kLaneGpuBase + 7;
  set.events = {ev(0, 100, 2, -1, stream7, profiler::Category::kernel),
                ev(200, 1000, 0, 551, profiler::kLaneCompute, profiler::Category::step),
                ev(300, 400, 1, 551, stream7, profiler::Category::kernel)};
  const TimelineModel all = build_timeline(set, {});
  EXPECT_EQ(all.events.size(), 3u);
  EXPECT_EQ(all.end_ns, 1200);
  const TimelineModel minus_one = build_timeline(set, {}, -1);
  ASSERT_EQ(minus_one.events.size(), 1u);
  ASSERT_EQ(minus_one.lanes.size(), 2u);  // compute (empty, for alignment) and the stream
  EXPECT_EQ(minus_one.lanes[1].label, "rank 0 · GPU stream 7");
  const TimelineModel step = build_timeline(set, {}, 551);
  EXPECT_EQ(step.events.size(), 2u);
  EXPECT_EQ(step.end_ns, 1000);  // aligned to its own first event
}

TEST(ImportedNcclRun, OneRankAndItsLastCompleteStep) {
  const auto& d = test::imported_db();
  if (d.path.empty()) GTEST_SKIP() << d.error;
  Database db(d.path);
  auto data = db.load_run(d.nccl_run);
  ASSERT_TRUE(data.has_value()) << db.error();
  const LayerBreakdown b = build_layer_breakdown(data->profile, data->events);
  EXPECT_EQ(b.profiled_steps, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(b.step, 5);
  EXPECT_EQ(b.ranks, (std::vector<int>{0}));
  const GpuSummary s = build_gpu_summary(data->profile, data->events);
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.device, "NVIDIA A100-PG509-200");
  EXPECT_GT(s.ranks[0].communication_kernels, 0u);
}

}  // namespace
}  // namespace hybrid::gui
