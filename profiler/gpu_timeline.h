// The GPU-timeline analysis: how each rank's device spent its time, computed
// from device activity records (kernels, memcpys, memsets) whatever their source:
// our CUPTI collector or an imported PyTorch profiler trace. Definitions and
// formulas: docs/profiler.md, "GPU timeline".
//
// Records are Events of category `kernel` or `memcpy` (memsets are memcpy events
// too); each is classified by what it does:
//   communication — a kernel whose name contains "nccl" or "rccl" (any case),
//   memory        — a memcpy or memset,
//   computation   — every other kernel.
// Times are unions over all streams of a rank: two kernels running at once on
// two streams count once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/event.h"
#include "profiler/profile_data.h"

namespace hybrid::profiler {

enum class GpuWork : uint8_t { computation = 0, communication = 1, memory = 2 };
std::string_view to_string(GpuWork w);

bool is_gpu_record(const Event& e);  // kernel or memcpy/memset
GpuWork classify_gpu_record(Category category, std::string_view name);

// Exclusive combinations of the three kinds of work: GpuRankTimeline::exclusive_ns
// (profiler/profile_data.h).
std::string gpu_work_mask_name(
    int mask);  // "idle", "computation", "computation + communication", ...

// One GpuRankTimeline per rank that has GPU records, sorted by rank. `names`
// are the names Event::name_id indexes (classification reads them).
std::vector<GpuRankTimeline> analyze_gpu_timeline(std::span<const Event> events,
                                                  std::span<const std::string> names);

// Device time of each module: the durations of the records launched inside its
// scope (innermost scope: Event::module_id), split by the launching scope's
// category, then added up the module tree so that every row is inclusive, as
// LayerStat is. Records without a module are left out. Sorted by (rank, step, module).
struct ModuleDeviceTime {
  int rank = 0;
  int64_t step = -1;
  int32_t module_id = -1;
  int64_t fwd_ns = 0;
  int64_t bwd_ns = 0;
  int64_t other_ns = 0;      // optimizer or unknown scope
  uint64_t records = 0;      // launched directly in this module (not in children)
  int64_t recompute_ns = 0;  // launched while recomputing (activation checkpointing)

  friend bool operator==(const ModuleDeviceTime&, const ModuleDeviceTime&) = default;
};
std::vector<ModuleDeviceTime> device_time_by_module(std::span<const Event> events,
                                                    std::span<const ModuleInfo> modules);

// Per (rank, step ≥ 0): the step accounting on a GPU: compute_ms = computation
// time, comm_ms = communication time, exposed_comm_ms = communication time with
// no computation running (unions over streams, as GpuRankTimeline).
std::vector<StepRankRow> gpu_step_accounting(std::span<const Event> events,
                                             std::span<const std::string> names);

// Layer rows whose fwd_ns/bwd_ns become device times: each row's host times move
// to host_fwd_ns/host_bwd_ns, and its device times (matched by rank, step and
// module) take their place; modules with device time and no host row get a row.
void apply_device_times(std::vector<LayerStat>& rows, std::span<const ModuleDeviceTime> device);

// The analysis of a whole run record (an import): per-rank timelines, step
// accounting and layer rows with device times.
void analyze_gpu_run(RunRecord& record);

// The kernels (and copies) that took the most device time on one rank, by name.
struct GpuKernelRow {
  std::string name;
  GpuWork work = GpuWork::computation;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
};
std::vector<GpuKernelRow> top_gpu_kernels(const EventSet& set, int rank, size_t n);

}  // namespace hybrid::profiler
