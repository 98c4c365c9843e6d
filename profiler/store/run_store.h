// The run store: every run, step, layer profile, collective, event, sweep and
// trial in one SQLite file (default results/hybrid.db; schema in docs/schema.md).
//
// Who opens it, and how:
// - every process of a training run on rank 0's machine opens its own RunStore
//   (never share one across fork or MPI ranks); rank 0 calls create_run and
//   broadcasts the id, each rank then writes its own rows (register_rank,
//   step_ranks, layer_stats, ...). Ranks on other machines must not open it (the
//   WAL index is shared memory): rank 0 stores their rows with add_rank_rows.
//   WAL mode plus a 10 s busy timeout and retried write transactions let many
//   processes write at once; each add_* call is one transaction.
// - the autotuner writes sweeps and trials while its trial processes write runs.
// - the viewer and hybrid-prof open read-only: nothing is ever written, no
//   migration runs, and each read sees the latest committed state (refresh by
//   reading again).
// A RunStore is safe to call from several threads (calls are serialized).
// Errors are StoreError (profiler/store/store_error.h) naming the file.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/generation_data.h"
#include "profiler/profile_data.h"
#include "profiler/store/store_error.h"
#include "profiler/sweep_data.h"

namespace hybrid::profiler {

struct RankRows;

namespace store {
class Connection;
class Statement;
}  // namespace store

// Unix time (ns) of a steady-clock time point, e.g. Tracer::epoch() for register_rank.
int64_t unix_ns_of(std::chrono::steady_clock::time_point t);

enum class OpenMode { read_write, read_only };

class RunStore {
 public:
  // read_write creates the file (and directories) if missing and migrates an older
  // schema; read_only requires an existing, current database.
  explicit RunStore(const std::filesystem::path& path, OpenMode mode = OpenMode::read_write);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const;
  bool read_only() const;
  static int schema_version();        // the version this build writes
  int opened_schema_version() const;  // the version the file had when opened (0: new)

  // --- runs: writers ------------------------------------------------------
  // Inserts the run as `running`, owned by this process (pid, host) for crash
  // detection; started_at = now when 0. Returns the new id.
  int64_t create_run(const RunInfo& info);
  // Rewrites the descriptive fields of run info.id (not status, times or writer).
  void update_run(const RunInfo& info);
  // Sets the final status (not `running`), error message, summary and finish time.
  void finish_run(int64_t run_id, RunStatus status, std::string_view error = {},
                  std::string_view summary_json = "{}");
  void heartbeat(int64_t run_id);  // every add_* on a run also counts as one
  // Records this process as `rank` of the run (host and pid filled in here).
  void register_rank(int64_t run_id, int rank, int64_t epoch_unix_ns);
  // With its place on its host and the host's resources; host and pid are this
  // process's.
  void register_rank(int64_t run_id, RankInfo info);
  void add_steps(int64_t run_id, std::span<const StepRow> rows);
  void add_step_ranks(int64_t run_id, std::span<const StepRankRow> rows);
  void add_step_timers(int64_t run_id, std::span<const StepTimerRow> rows);
  void add_modules(int64_t run_id, std::span<const ModuleInfo> modules);
  void add_layer_stats(int64_t run_id, std::span<const LayerStat> rows);
  void add_comm_stats(int64_t run_id, std::span<const CommStatRow> rows);
  void add_memory(int64_t run_id, std::span<const MemoryRow> rows);
  // Events as the tracer drained them, with its name table (Event::name_id indexes
  // `names`); names are interned into the store's own table. One transaction.
  void add_events(int64_t run_id, std::span<const Event> events,
                  std::span<const std::string> names);
  void add_gpu_timeline(int64_t run_id, std::span<const GpuRankTimeline> rows);
  // Everything one rank writes (profiler/rank_rows.h), in one transaction, its
  // host and pid as given: rank 0 storing the rows of a rank on another machine,
  // which cannot open the file itself. Nothing is written for bad event names.
  void add_rank_rows(int64_t run_id, const RankRows& rows);
  // Rows are replaced when their key exists (a re-written step, module, ...).

  // A finished run written whole, in one transaction (an imported trace): either
  // everything is stored or, on any error, nothing. Ranks keep the host and pid
  // given. Returns the new run id.
  int64_t write_run(const RunRecord& record);

  // Marks `running` runs whose writer died as failed: a writer on this host whose
  // process no longer exists (or is another process with the same pid), and, when
  // heartbeat_timeout_s is given, a writer on another host silent for longer.
  // Returns the ids marked.
  std::vector<int64_t> mark_stale_runs(std::optional<double> heartbeat_timeout_s = std::nullopt);

  // Marks `running` runs called `name` and started at or after `since` (unix s)
  // as failed with `why`: the runs of a trial whose launcher has ended without
  // finishing them (its writer may be on a host that was lost). Returns their ids.
  std::vector<int64_t> fail_running_runs(const std::string& name, double since,
                                         const std::string& why);

  // --- runs: readers ------------------------------------------------------
  std::vector<RunInfo> list_runs();
  std::optional<RunInfo> find_run(int64_t run_id);
  RunInfo get_run(int64_t run_id);  // throws StoreError when missing
  std::vector<RankInfo> ranks(int64_t run_id);
  std::vector<StepRow> steps(int64_t run_id);
  std::vector<StepRankRow> step_ranks(int64_t run_id);
  std::vector<StepTimerRow> step_timers(int64_t run_id);  // by step, rank, name
  std::vector<ModuleInfo> modules(int64_t run_id);
  std::vector<LayerStat> layer_stats(int64_t run_id, std::optional<int> rank = std::nullopt);
  std::vector<CommStatRow> comm_stats(int64_t run_id);
  std::vector<MemoryRow> memory(int64_t run_id);
  std::vector<GpuRankTimeline> gpu_timeline(int64_t run_id);  // by rank
  // Sorted by rank, then start time; names hold only the names these events use.
  EventSet events(int64_t run_id, const EventFilter& filter = {});
  int64_t event_count(int64_t run_id);
  // All of the above but events, from one snapshot; throws when the run is missing.
  RunProfile load_profile(int64_t run_id);

  // --- generation runs (profiler/generation_data.h) -------------------------
  // Stores `row` (its id and run_id ignored) under run `run_id`, which must
  // exist, and counts as a heartbeat; returns the row's id. A row that
  // generation_row_error refuses throws std::invalid_argument with its text.
  int64_t add_generation(int64_t run_id, const GenerationRow& row);
  // Run `run_id`'s rows, or every run's when it is empty: by run, then as added.
  std::vector<GenerationRow> generations(std::optional<int64_t> run_id = std::nullopt);

  // --- autotuner ----------------------------------------------------------
  int64_t create_sweep(const SweepInfo& info);
  void set_sweep_status(int64_t sweep_id, SweepStatus status);  // finished_at unless running
  // Inserts or updates the trial (sweep_id, key); returns its id.
  int64_t upsert_trial(const TrialRow& trial);
  void add_pruned(int64_t sweep_id, std::span<const PrunedCandidate> rows);
  int64_t add_tie_break(const TieBreak& tie_break);  // returns its id
  int64_t add_probe(const ProbeResult& probe);

  std::vector<SweepInfo> sweeps();
  SweepInfo get_sweep(int64_t sweep_id);  // throws StoreError when missing
  std::vector<TrialRow> trials(int64_t sweep_id);
  std::optional<TrialRow> find_trial(int64_t sweep_id, std::string_view key);
  std::vector<PrunedCandidate> pruned(int64_t sweep_id);
  std::vector<TieBreak> tie_breaks(int64_t sweep_id);  // in the order they were decided
  // The newest probe, of `host` when given.
  std::optional<ProbeResult> latest_probe(std::optional<std::string_view> host = std::nullopt);

  // PRAGMA data_version: changes whenever another connection commits to the
  // file, so a reader learns of new rows exactly, whatever the clock's
  // resolution or the WAL's size.
  int64_t data_version();
  // PRAGMA integrity_check: "ok" or the problems found.
  std::string integrity_check();

 private:
  void touch(int64_t run_id);  // inside a write transaction
  // One write transaction on an existing run: touch, then body.
  void write_to_run(int64_t run_id, const std::function<void(store::Connection&)>& body);
  // Rows of one of the run's tables, in one write_to_run.
  template <class Row>
  void add_rows(int64_t run_id, std::span<const Row> rows);
  // One of the run's tables, whole, in its reading order.
  template <class Row>
  std::vector<Row> locked_run_rows(int64_t run_id);
  RunInfo read_run_row(store::Statement& st);
  std::optional<RunInfo> find_run_unlocked(int64_t run_id);

  std::mutex mutex_;
  std::unique_ptr<store::Connection> conn_;
  int opened_version_ = 0;
};

}  // namespace hybrid::profiler
