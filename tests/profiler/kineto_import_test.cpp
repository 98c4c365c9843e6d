// The PyTorch-trace importer and the GPU-timeline analysis on real GPU traces
// (tests/profiler/data/kineto, from HolisticTraceAnalysis's test data), against
// the figures that HolisticTraceAnalysis 0.5.0 (PyPI, with pandas 2.3.3 and 3.1.1)
// computes on the same files (scripts/hta-reference.py); and the importer's
// translation rules on small hand-written traces.
#include "profiler/import/kineto_import.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "profiler/gpu_timeline.h"
#include "store_test_util.h"

namespace hybrid::profiler::import {
namespace {

const std::filesystem::path kData =
    std::filesystem::path(HYBRID_SOURCE_DIR) / "tests/profiler/data/kineto";

RunRecord import_files(std::vector<std::string> names, KinetoImportOptions options = {}) {
  std::vector<std::filesystem::path> files;
  for (const auto& n : names) files.push_back(kData / n);
  RunRecord r = import_kineto(files, options);
  analyze_gpu_run(r);
  return r;
}

// HolisticTraceAnalysis 0.5.0: get_temporal_breakdown() and get_comm_comp_overlap(),
// default options (include_last_profiler_step=False), full precision.
struct HtaFigures {
  int rank;
  int64_t idle_us, compute_us, non_compute_us, span_us;
  double idle_pct, compute_pct, non_compute_pct;
  std::optional<double> overlap_pct;
};

void expect_hta(const GpuRankTimeline& t, const HtaFigures& h) {
  SCOPED_TRACE("rank " + std::to_string(h.rank));
  EXPECT_EQ(t.rank, h.rank);
  // Our unit is ns; the rules (docs/profiler.md) make these whole microseconds.
  EXPECT_EQ(t.span_ns, h.span_us * 1000);
  EXPECT_EQ(t.idle_ns, h.idle_us * 1000);
  EXPECT_EQ(t.compute_ns, h.compute_us * 1000);
  EXPECT_EQ(t.non_compute_ns, h.non_compute_us * 1000);
  // The issue's bar is 0.5 percentage points; the figures agree to rounding.
  EXPECT_NEAR(t.pct(t.idle_ns), h.idle_pct, 1e-9);
  EXPECT_NEAR(t.pct(t.compute_ns), h.compute_pct, 1e-9);
  EXPECT_NEAR(t.pct(t.non_compute_ns), h.non_compute_pct, 1e-9);
  ASSERT_EQ(t.comm_comp_overlap_pct().has_value(), h.overlap_pct.has_value());
  if (h.overlap_pct) {
    EXPECT_NEAR(*t.comm_comp_overlap_pct(), *h.overlap_pct, 1e-9);
  }
}

// HTA's kernel-type breakdown (µs) by mask of the kinds of work: 1 computation,
// 2 communication, 4 memory.
void expect_hta_kinds(const GpuRankTimeline& t, const std::map<int, int64_t>& us_by_mask) {
  for (const auto& [mask, us] : us_by_mask)
    EXPECT_EQ(t.exclusive_ns[size_t(mask)], us * 1000) << "mask " << mask;
}

TEST(KinetoHta, TraceFilterTwoRanksOfOneJob) {
  const RunRecord r =
      import_files({"trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"});
  EXPECT_EQ(r.run.world_size, 128);
  ASSERT_EQ(r.gpu.size(), 2u);
  expect_hta(r.gpu[0], {0, 321378, 106252, 172428, 600058, 53.55782274380143, 17.706954994350546,
                        28.735222261848023, 11.809939230111556});
  expect_hta(r.gpu[1], {1, 328671, 135548, 136455, 600674, 54.71703453120994, 22.565984211069566,
                        22.716981257720494, 20.05094419349271});
  // HTA's kernel-type breakdown of rank 0 (µs): computation, communication, both,
  // memory, communication + memory, computation + memory, all three.
  expect_hta_kinds(r.gpu[0],
                   {{1, 83182}, {2, 171780}, {3, 23056}, {4, 169}, {6, 479}, {5, 2}, {7, 12}});
  // HTA keeps 602 and 577 GPU records (of 1204 and 1154): the last step is dropped.
  const auto& t0 = r.gpu[0];
  EXPECT_EQ(t0.computation_kernels + t0.communication_kernels + t0.memory_records, 602u);
  const auto& t1 = r.gpu[1];
  EXPECT_EQ(t1.computation_kernels + t1.communication_kernels + t1.memory_records, 577u);
}

TEST(KinetoHta, NcclParserNanosecondTrace) {
  const RunRecord r = import_files({"nccl_parser_config_nccl_data.json.gz"});
  ASSERT_EQ(r.gpu.size(), 1u);
  expect_hta(r.gpu[0], {0, 338781, 75169, 21636, 435586, 77.77591566303784, 17.256982547648455,
                        4.967101789313706, 14.305132218469396});
  expect_hta_kinds(r.gpu[0], {{1, 71696}, {2, 20621}, {3, 3473}, {4, 831}, {6, 184}});
  EXPECT_EQ(r.run.device, "NVIDIA A100-PG509-200");
  EXPECT_EQ(r.run.world_size, 2);
}

TEST(KinetoHta, NsResolutionTraceWithoutCommunication) {
  const RunRecord r = import_files({"ns_resolution_rank-0.json.gz"});
  ASSERT_EQ(r.gpu.size(), 1u);
  expect_hta(r.gpu[0], {0, 10113, 372150, 2371, 384634, 2.6292527441671822, 96.7543170910528,
                        0.6164301647800247, std::nullopt});
  // HTA's top kernel: vectorized_elementwise_kernel<CUDAFunctor_add<float>>, 128 × = 20956 µs.
  const auto top = top_gpu_kernels(r.events, 0, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_NE(top[0].name.find("CUDAFunctor_add<float>"), std::string::npos) << top[0].name;
  EXPECT_EQ(top[0].count, 128u);
  EXPECT_EQ(top[0].total_ns, 20956'000);
}

TEST(KinetoHta, ExactTimesKeepNanosecondsAndTheLastStep) {
  KinetoImportOptions exact;
  exact.hta_compatible = false;
  const RunRecord r = import_files({"nccl_parser_config_nccl_data.json.gz"}, exact);
  const auto& t = r.gpu[0];
  EXPECT_EQ(t.computation_kernels + t.communication_kernels + t.memory_records, 3774u);
  EXPECT_NE(t.span_ns % 1000, 0);  // nanosecond resolution kept
  // Independent figures (a float64 Python computation of the same formulas over every
  // record, no rounding; HTA itself always rounds): idle 76.156 %, compute 17.509 %,
  // overlap 15.609 %. Float64 at these magnitudes is within 1 ns of our exact times.
  EXPECT_NEAR(t.pct(t.idle_ns), 76.15625792286959, 1e-4);
  EXPECT_NEAR(t.pct(t.compute_ns), 17.50899502801749, 1e-4);
  EXPECT_NEAR(*t.comm_comp_overlap_pct(), 15.60915935842709, 1e-4);
}

TEST(KinetoImport, ModulesAndPhasesFromTheScopesOnTheLaunchingThread) {
  const RunRecord r = import_files({"nccl_parser_config_nccl_data.json.gz"});
  EXPECT_EQ(r.run.source, "kineto");
  EXPECT_EQ(r.run.backend, "cuda");
  // Step rows from the ProfilerStep annotations: #4 lasted 222442.191 µs.
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].step, 4);
  EXPECT_DOUBLE_EQ(r.steps[0].step_ms, 222.442191);
  EXPECT_EQ(r.steps[2].step, 6);
  EXPECT_TRUE(std::isnan(r.steps[0].loss));
  std::map<std::string, const ModuleInfo*> by_name;
  for (const auto& m : r.modules) by_name[m.name] = &m;
  ASSERT_TRUE(by_name.count("## forward ##"));
  ASSERT_TRUE(by_name.count("DistributedDataParallel.forward"));
  EXPECT_EQ(by_name["DistributedDataParallel.forward"]->parent_id, by_name["## forward ##"]->id);
  // Forward kernels are attributed to DDP.forward; backward ones come from autograd.
  int64_t fwd = 0, bwd = 0, ddp_fwd = 0;
  for (const Event& e : r.events.events) {
    if (!is_gpu_record(e)) continue;
    fwd += e.scope == Category::forward;
    bwd += e.scope == Category::backward;
    ddp_fwd += e.module_id == by_name["DistributedDataParallel.forward"]->id;
    EXPECT_GE(e.lane, kLaneGpuBase);
    EXPECT_TRUE(e.step == 4 || e.step == 5 || e.step == -1) << e.step;
  }
  EXPECT_GT(fwd, 100);
  EXPECT_GT(bwd, 100);
  EXPECT_GT(ddp_fwd, 100);
  // Layer rows: device time of the forward scope, inclusive of its children.
  const auto* forward = by_name["## forward ##"];
  int64_t device_fwd = 0;
  for (const LayerStat& l : r.layers)
    if (l.module_id == forward->id) device_fwd += l.fwd_ns;
  std::set<int32_t> inside = {forward->id};  // the scope and its descendants
  for (const auto& m : r.modules)
    if (inside.count(m.parent_id)) inside.insert(m.id);  // parents come first
  int64_t expected = 0;
  for (const Event& e : r.events.events)
    if (is_gpu_record(e) && e.scope == Category::forward && inside.count(e.module_id))
      expected += e.dur_ns;
  EXPECT_GT(device_fwd, 0);
  EXPECT_EQ(device_fwd, expected);
}

// --- hand-written traces ---------------------------------------------------------

struct TraceFile {
  test::TempDir dir;
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto p = dir.path() / name;
    std::ofstream(p) << text;
    return p;
  }
};

// One thread: scope "model" [0,100) ⊃ "layer.forward" [10,50); launches at 20 (inside
// both) and 60 (only model); an autograd op [70,90) with a launch at 80; two streams.
const char* kSmallTrace = R"({
  "distributedInfo": {"rank": 1, "world_size": 2, "backend": "nccl"},
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "model", "pid": 7, "tid": 7, "ts": 1000, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "layer.forward", "pid": 7, "tid": 7, "ts": 1010, "dur": 40},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1020, "dur": 2, "args": {"correlation": 11}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1060, "dur": 2, "args": {"correlation": 12}},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 7, "tid": 8, "ts": 1070, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 8, "ts": 1080, "dur": 2, "args": {"correlation": 13}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1100.4, "dur": 10, "args": {"correlation": 11, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 20, "ts": 1105, "dur": 20, "args": {"correlation": 12, "stream": 20, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "gemm_dgrad", "pid": 0, "tid": 7, "ts": 1130, "dur": 5, "args": {"correlation": 13, "stream": 7, "device": 0}},
    {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "python"}}
  ]})";

TEST(KinetoImport, TranslatesASmallTraceByTheRules) {
  TraceFile f;
  const auto path = f.write("job.json", kSmallTrace);
  RunRecord r = import_kineto(std::vector{path});
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_EQ(r.ranks[0].rank, 1);
  EXPECT_EQ(r.run.world_size, 2);
  EXPECT_EQ(r.run.device, "NVIDIA H200");
  EXPECT_EQ(r.run.name, "job");
  ASSERT_EQ(r.modules.size(), 2u);
  EXPECT_EQ(r.modules[0].name, "model");
  EXPECT_EQ(r.modules[1].name, "layer.forward");
  EXPECT_EQ(r.modules[1].parent_id, 0);
  std::vector<const Event*> gpu;
  for (const Event& e : r.events.events)
    if (is_gpu_record(e)) gpu.push_back(&e);
  ASSERT_EQ(gpu.size(), 3u);
  // Times relative to the rank's first event (1000 µs); 1100.4 rounds up to 1101.
  EXPECT_EQ(gpu[0]->start_ns, 101'000);
  EXPECT_EQ(gpu[0]->dur_ns, 9'000);  // end 1110.4 rounds down to 1110
  EXPECT_EQ(gpu[0]->module_id, 1);
  EXPECT_EQ(gpu[0]->scope, Category::forward);  // the innermost scope names its phase
  EXPECT_EQ(gpu[0]->lane, kLaneGpuBase + 7);
  EXPECT_EQ(gpu[1]->module_id, 0);
  EXPECT_EQ(gpu[1]->scope, Category::other);
  EXPECT_EQ(gpu[1]->lane, kLaneGpuBase + 20);
  EXPECT_EQ(gpu[2]->module_id, -1);
  EXPECT_EQ(gpu[2]->scope, Category::backward);
  EXPECT_EQ(r.ranks[0].epoch_unix_ns, 1'000'000);
}

TEST(KinetoImport, ParsesMicrosecondTextExactly) {
  EXPECT_EQ(parse_us_as_ns("1712195495505543.2"), 1712195495505543200);
  EXPECT_EQ(parse_us_as_ns("12"), 12000);
  EXPECT_EQ(parse_us_as_ns("0.0015"), 2);  // rounded to the nearest ns
  EXPECT_EQ(parse_us_as_ns("0.0014"), 1);
  EXPECT_EQ(parse_us_as_ns("-3.5"), -3500);
  EXPECT_EQ(parse_us_as_ns("1e3"), std::nullopt);
  EXPECT_EQ(parse_us_as_ns(""), std::nullopt);
  EXPECT_EQ(parse_us_as_ns("99999999999999999999"), std::nullopt);
}

}  // namespace
}  // namespace hybrid::profiler::import
