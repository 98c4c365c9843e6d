// Records a training run for the profiler, a sink of what the trainer measured:
// each step's StepRecord, the profiled steps' events (turned into layer rows by
// profiler/tables/layer_rows.h) and the run's TrainSummary become rows of the
// run store (every rank on rank 0's machine writes its own rows, rank 0 also
// the run, the global step rows and the rows of ranks on other machines, handed
// over at the end), the DeepSpeed-style FLOPs report and comms summary, and the
// Chrome trace. It computes no figure of its own, and which steps are traced is
// the ProfileWindow's decision.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/profile_window.h"
#include "engine/step_record.h"
#include "engine/train_summary.h"
#include "profiler/generation_data.h"
#include "profiler/profile_data.h"
#include "profiler/rank_rows.h"

namespace hybrid {

class Engine;

namespace profiler {
class RunStore;
}  // namespace profiler

class RunRecorder {
 public:
  // Rank 0 creates the run in `db` (if any) right away, so a run that fails
  // while the engine starts (e.g. out of memory) is still recorded.
  RunRecorder(const engine::Config& cfg, std::string db, const std::string& run_name, int rank);
  ~RunRecorder();

  // Collective: shares the run id, registers this rank, writes the module tree.
  void attach(Engine& engine, const ProfileWindow& window);
  void on_step(const StepRecord& step);
  // A hybrid.rollout's row (rank 0 writes it).
  void on_rollout(const profiler::GenerationRow& row);
  // Collective: layer stats, events, comm stats, memory; reports; finishes the run.
  void finish(const TrainSummary& summary);
  // After a failure (not collective): marks the run with the summary's status.
  void fail(const TrainSummary& summary);

  int64_t run_id() const { return run_id_; }

 private:
  void open_store();
  void register_rank();
  std::vector<profiler::LayerStat> profile_rows(const std::vector<profiler::Event>& events);
  void print_reports(const std::vector<profiler::LayerStat>& mine);
  void print_flops_report(const std::vector<profiler::LayerStat>& mine);
  void flush_steps();
  std::vector<profiler::CommStatRow> comm_rows() const;  // collectives and offload I/O so far
  std::vector<profiler::MemoryRow> memory_rows(const MemoryReport& memory) const;
  void write_chrome_trace(const std::vector<profiler::Event>& events);

  const engine::Config& cfg_;
  std::string db_;
  int rank_;
  Engine* engine_ = nullptr;
  ProfileWindow window_;
  std::unique_ptr<profiler::RunStore> store_;
  int64_t run_id_ = 0;
  std::vector<profiler::StepRow> steps_;          // rank 0, not yet flushed
  std::vector<profiler::StepRow> profiled_rows_;  // rank 0, the profiled steps' rows
  std::vector<profiler::ModuleInfo> modules_;
  // This rank's rows not yet stored: its step rows, flushed in batches; on
  // another machine than rank 0's (no store), every row, for finish() to hand over.
  bool away_ = false;
  profiler::RankRows rows_;
};

}  // namespace hybrid
