// Records a training run for the profiler: the run store (every rank on rank
// 0's machine writes its own rows, rank 0 also the run, the global step rows and
// the rows of ranks on other machines, handed over at the end), the profiled-step
// window in which the tracer is on, per-module layer statistics aggregated from
// its events, the DeepSpeed-style FLOPs report and comms summary, and the
// Chrome trace.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/memory_model.h"
#include "engine/trainer.h"
#include "profiler/profile_data.h"
#include "profiler/rank_rows.h"

namespace hybrid {

class Engine;

namespace profiler {
class RunStore;
struct StepCommTotals;
}  // namespace profiler

class RunRecorder {
 public:
  // Rank 0 creates the run in `opts.db` (if any) right away, so a run that fails
  // while the engine starts (e.g. out of memory) is still recorded.
  RunRecorder(const engine::Config& cfg, const TrainOptions& opts, int rank);
  ~RunRecorder();

  // Collective: shares the run id, registers this rank, writes the module tree.
  void attach(Engine& engine, int64_t steps);
  // Whether step `step` (numbered from 1) is traced.
  bool profiled(int64_t step) const;
  void on_step(int64_t step, double loss, double step_ms, double flops_per_step);
  // Collective: layer stats, events, comm stats, memory; reports; finishes the run.
  void finish(const TrainSummary& summary);
  // After a failure (not collective): marks the run with the summary's status.
  void fail(const TrainSummary& summary);

  int64_t run_id() const { return run_id_; }

 private:
  std::vector<profiler::LayerStat> layer_stats(const std::vector<profiler::Event>& events) const;
  void print_flops_report(const std::vector<profiler::LayerStat>& mine);
  void flush_steps();
  std::vector<profiler::CommStatRow> comm_rows() const;  // collectives and offload I/O so far
  std::vector<profiler::MemoryRow> memory_rows(const TrainSummary& summary,
                                               const engine::MemoryPrediction& predicted) const;

  const engine::Config& cfg_;
  TrainOptions opts_;
  int rank_;
  Engine* engine_ = nullptr;
  std::unique_ptr<profiler::RunStore> store_;
  int64_t run_id_ = 0;
  int64_t profile_begin_ = 0, profile_end_ = 0;  // [begin, end), steps numbered from 1
  std::vector<profiler::Event> events_;
  std::vector<profiler::StepRow> steps_;          // rank 0, not yet flushed
  std::vector<profiler::StepRow> profiled_rows_;  // rank 0, the profiled steps' rows
  std::vector<profiler::StepRankRow> step_ranks_;
  std::vector<profiler::StepTimerRow> step_timers_;  // wall_clock_breakdown, this rank
  std::vector<profiler::ModuleInfo> modules_;
  // On another machine than rank 0's: no store; every row waits here for finish().
  bool away_ = false;
  profiler::RankRows forwarded_;
};

}  // namespace hybrid
