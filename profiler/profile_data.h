// The profiler's data layer: plain rows that the engine writes, the autotuner
// writes, and the viewer, reports and hybrid-prof read. The run store
// (profiler/store/run_store.h) maps each struct to one table (docs/schema.md),
// whose columns profiler/profile_columns.h lists.
//
// Conventions shared by every struct:
// - times of day are unix seconds (double); durations are ns (int64) or ms (double)
//   as the field name says; sizes are bytes; rates are per second.
// - std::optional marks values that may be unknown (NULL in the database).
// - ids are assigned by the store; fields marked "store" are ignored on write.
// - == compares every field (NaN != NaN, as for doubles).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/event.h"

namespace hybrid::profiler {

// diverged: the run finished its steps, but its loss went NaN or infinite (or
// every step was skipped) for its last steps (engine/divergence.h).
enum class RunStatus : uint8_t { running, ok, failed, oom, config_error, killed, diverged };

std::string_view to_string(RunStatus s);
// Throws std::invalid_argument naming the value when it is not one of the above.
RunStatus parse_run_status(std::string_view s);

// One training run: one process group (all ranks) executing one config.
struct RunInfo {
  int64_t id = 0;  // store
  std::string name;
  std::string config_json = "{}";  // the resolved ds_config.json
  std::string host;                // host of rank 0
  std::string device;              // e.g. "NVIDIA H200" or "AMD EPYC 7R13 (2 cores)"
  std::string backend;             // "cpu" | "cuda"
  std::string source = "hybrid";   // "hybrid" (our engine) | "kineto" (an imported trace)
  int world_size = 1;
  std::string dtype;  // "fp32" | "fp16" | "bf16"
  int zero_stage = 0;
  int micro_batch = 0;  // per rank
  int grad_accum = 1;
  int seq_len = 0;
  uint64_t n_params = 0;
  std::string git_revision;
  std::string hybrid_version;
  double started_at = 0;  // 0 on create_run → now
  std::optional<double> finished_at;
  RunStatus status = RunStatus::running;
  std::string error;                // failure message (empty when ok)
  std::string summary_json = "{}";  // what hybrid-train --result writes
  // Crash detection (store): the creating process, and the last write to the run.
  int64_t writer_pid = 0;
  std::string writer_host;
  double last_update = 0;

  friend bool operator==(const RunInfo&, const RunInfo&) = default;
};

// One process of a run: where it ran, and how its tracer clock maps to wall time
// (steady clocks of different processes do not share an epoch).
struct RankInfo {
  int rank = 0;
  std::string host;           // store: filled from the registering process
  int64_t pid = 0;            // store
  int64_t epoch_unix_ns = 0;  // unix time of the tracer's epoch (Event::start_ns = 0)
  // Its place on its host (from the communicator's gathered host names) and the
  // host's resources as this rank saw them.
  int local_rank = 0;
  int local_size = 1;
  int threads = 0;  // OpenMP threads of this rank; 0 = not recorded
  uint64_t host_memory_bytes = 0;
  int pipeline_stage = 0;  // its stage of the pipeline (0 without pipeline stages)

  friend bool operator==(const RankInfo&, const RankInfo&) = default;
};

// One optimizer step, as rank 0 sees it (global numbers).
struct StepRow {
  int64_t step = 0;
  double loss = 0;  // NaN allowed (overflowed fp16 step)
  double lr = 0;
  double loss_scale = 1;  // 1 when no dynamic scaling
  bool skipped = false;   // overflow: the optimizer did not step
  double grad_norm = 0;   // NaN allowed
  double step_ms = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;  // achieved model FLOP/s, all ranks together

  friend bool operator==(const StepRow&, const StepRow&) = default;
};

// One optimizer step on one rank. A separate row (and table) because every rank
// writes its own concurrently, while StepRow is written once by rank 0.
struct StepRankRow {
  int64_t step = 0;
  int rank = 0;
  double compute_ms = 0;
  double comm_ms = 0;          // total time collectives were in flight
  double exposed_comm_ms = 0;  // part of comm_ms the compute lane waited for
  // Pipeline bubble: the compute thread's waits on pipeline transfers (the pp
  // group's sends and receives); 0 without pipeline stages.
  double bubble_ms = 0;

  friend bool operator==(const StepRankRow&, const StepRankRow&) = default;
};

// One of DeepSpeed's wall-clock timers (wall_clock_breakdown) for one optimizer
// step on one rank: forward, backward, backward_inner, backward_allreduce, step,
// optimizer_gradients, optimizer_step, optimizer_allgather (engine/step_timers.h).
// Summed over the step's micro-steps.
struct StepTimerRow {
  int64_t step = 0;
  int rank = 0;
  std::string name;
  double ms = 0;

  friend bool operator==(const StepTimerRow&, const StepTimerRow&) = default;
};

// One module of the model tree. Parameters are counted once: a tied weight
// belongs to the one module that owns it, and n_params excludes children.
struct ModuleInfo {
  int32_t id = 0;          // Event::module_id refers to this
  int32_t parent_id = -1;  // -1: a root
  std::string name;        // "h.3.attn"
  std::string type;        // "Attention"
  int depth = 0;           // 0 for roots
  uint64_t n_params = 0;
  uint64_t activation_bytes = 0;  // saved for backward, per micro batch

  friend bool operator==(const ModuleInfo&, const ModuleInfo&) = default;
};

// A module's cost on one rank in one profiled step. Values are inclusive (a
// module's time and FLOPs include its children's), summed over micro-steps;
// a container without a row of its own is the sum of its children in reports.
struct LayerStat {
  int rank = 0;
  int32_t module_id = 0;
  int64_t step = 0;
  int64_t fwd_ns = 0;
  int64_t bwd_ns = 0;
  uint64_t fwd_flops = 0;
  uint64_t bwd_flops = 0;
  uint64_t fwd_macs = 0;  // multiply-accumulates of matmul-like ops only
  uint64_t bwd_macs = 0;
  int64_t calls = 0;  // forward invocations
  // fwd_ns/bwd_ns are the module's time: on a GPU the device time of the records
  // launched in its scope, on the CPU its scope's time. host_*_ns are always the
  // scope's host time (on a GPU: the time spent launching).
  int64_t host_fwd_ns = 0;
  int64_t host_bwd_ns = 0;
  // Activation checkpointing: the forward run again in backward (category
  // recompute), apart from fwd/bwd; the same device/host split.
  int64_t recompute_ns = 0;
  uint64_t recompute_flops = 0;
  int64_t host_recompute_ns = 0;

  friend bool operator==(const LayerStat&, const LayerStat&) = default;
};

// Collectives of one kind and message size on one rank (nccl-tests conventions).
struct CommStatRow {
  int rank = 0;
  std::string op;      // collective_name(): "all_reduce", ...
  uint64_t bytes = 0;  // message size (see CommRecord::bytes)
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double algbw_gbps = 0;            // bytes / mean time, GB/s (1e9)
  double busbw_gbps = 0;            // algbw × the op's bus factor
  std::string link = "intra_host";  // link_name(): whether its ranks spanned hosts
  std::string group = "world";      // communicator group: "world", "dp", "pp", "tied", "tp"

  friend bool operator==(const CommStatRow&, const CommStatRow&) = default;
};

// One tracking-allocator category on one rank.
struct MemoryRow {
  int rank = 0;
  std::string category;  // "params", "grads", "optimizer", "activations", "comm", ...
  uint64_t current_bytes = 0;
  uint64_t peak_bytes = 0;
  std::optional<uint64_t> predicted_bytes;  // from the memory model, when known

  friend bool operator==(const MemoryRow&, const MemoryRow&) = default;
};

constexpr int kGpuWorkMasks = 8;

// The GPU-timeline analysis of one rank (profiler/gpu_timeline.h computes it;
// definitions in docs/profiler.md): its device over the span from its first
// GPU record's start to its last record's end. Every *_ns is a length of time
// in that span; times are unions over all of the rank's streams.
struct GpuRankTimeline {
  int rank = 0;
  int64_t first_start_ns = 0;
  int64_t last_end_ns = 0;
  int64_t span_ns = 0;
  int64_t idle_ns = 0;          // no record on any stream
  int64_t compute_ns = 0;       // a computation kernel runs
  int64_t non_compute_ns = 0;   // only communication and/or memory work runs
  int64_t comm_ns = 0;          // a communication kernel runs
  int64_t memory_ns = 0;        // a memcpy/memset runs
  int64_t comm_overlap_ns = 0;  // a communication kernel and a computation kernel run
  int64_t exposed_comm_ns = 0;  // a communication kernel runs and no computation kernel does
  // Exclusive combinations of work, by bit mask (1 computation, 2 communication,
  // 4 memory): [0] = idle_ns, [3] = computation and communication and no memory, ...
  std::array<int64_t, kGpuWorkMasks> exclusive_ns{};
  uint64_t computation_kernels = 0;
  uint64_t communication_kernels = 0;
  uint64_t memory_records = 0;

  double pct(int64_t ns) const { return span_ns > 0 ? 100.0 * double(ns) / double(span_ns) : 0.0; }
  // % of communication time during which computation runs; none without communication.
  std::optional<double> comm_comp_overlap_pct() const;

  friend bool operator==(const GpuRankTimeline&, const GpuRankTimeline&) = default;
};

// Events as the tracer produces them: Event::name_id indexes `names`.
struct EventSet {
  std::vector<Event> events;
  std::vector<std::string> names;
};

struct EventFilter {
  std::optional<int> rank;
  std::optional<int64_t> step_min;  // inclusive
  std::optional<int64_t> step_max;  // inclusive
};

// Everything of a run except its events: what the reports take.
struct RunProfile {
  RunInfo run;
  std::vector<RankInfo> ranks;
  std::vector<StepRow> steps;
  std::vector<StepRankRow> step_ranks;
  std::vector<StepTimerRow> step_timers;  // empty without wall_clock_breakdown
  std::vector<ModuleInfo> modules;
  std::vector<LayerStat> layers;
  std::vector<CommStatRow> comm;
  std::vector<MemoryRow> memory;
  std::vector<GpuRankTimeline> gpu;  // by rank; empty without GPU records
};

// A whole run at once: what an importer produces and RunStore::write_run stores.
struct RunRecord {
  RunInfo run;  // status and times as given (an import is finished)
  std::vector<RankInfo> ranks;
  std::vector<ModuleInfo> modules;
  std::vector<StepRow> steps;
  std::vector<StepRankRow> step_ranks;
  std::vector<LayerStat> layers;
  std::vector<GpuRankTimeline> gpu;
  EventSet events;
};

}  // namespace hybrid::profiler
