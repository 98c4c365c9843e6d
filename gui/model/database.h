// The viewer's handle on a run store: opened read-only (never written, never
// migrated), with the failure kept as a message for the window instead of an
// exception, and a cheap change check so the viewer can follow a sweep that is
// still writing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/profile_data.h"
#include "profiler/store/run_store.h"

namespace hybrid::gui {

// Everything the run windows show about one run: the profile rows and the events
// of its profiled steps.
struct RunData {
  profiler::RunProfile profile;
  profiler::EventSet events;
  double loaded_last_update = 0;  // RunInfo::last_update when read
  int64_t loaded_event_count = 0;
};

class Database {
 public:
  // Opens `path` read-only. Never throws: when the file is missing, not SQLite,
  // not a run store or from a newer schema, is_open() is false and error() says why.
  explicit Database(std::filesystem::path path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::filesystem::path& path() const { return path_; }
  bool is_open() const { return store_ != nullptr; }
  // Why the database could not be opened or read; empty when all is well.
  const std::string& error() const { return error_; }

  // Re-reads the lists (runs, sweeps, trials, pruned candidates, generation rows) when a writer
  // committed since the last refresh (SQLite's data_version: exact, where a
  // file's mtime and size can miss a commit within one clock tick), or always
  // when `force`. Returns true when the lists were re-read. A read error sets
  // error() and keeps the last lists.
  bool refresh(bool force = false);
  int64_t generation() const { return generation_; }  // bumps on every re-read

  const std::vector<profiler::RunInfo>& runs() const { return runs_; }
  const std::vector<profiler::SweepInfo>& sweeps() const { return sweeps_; }
  const std::vector<profiler::TrialRow>& trials(int64_t sweep_id) const;
  const std::vector<profiler::PrunedCandidate>& pruned(int64_t sweep_id) const;
  const profiler::RunInfo* find_run(int64_t run_id) const;
  // Every run's generation rows (profiler/generation_data.h), by run.
  const std::vector<profiler::GenerationRow>& generations() const { return generations_; }

  // Reads one run; nullopt (and error() set) when it cannot be read.
  std::optional<RunData> load_run(int64_t run_id, bool with_events = true);
  // True when the run was written to after `data` was read (new steps, status, events).
  bool run_changed(const RunData& data) const;

 private:
  std::filesystem::path path_;
  std::unique_ptr<profiler::RunStore> store_;
  std::string error_;
  int64_t data_version_ = -1;  // PRAGMA data_version at the last re-read
  int64_t generation_ = 0;
  std::vector<profiler::RunInfo> runs_;
  std::vector<profiler::SweepInfo> sweeps_;
  std::vector<std::vector<profiler::TrialRow>> trials_;  // parallel to sweeps_
  std::vector<std::vector<profiler::PrunedCandidate>> pruned_;
  std::vector<profiler::GenerationRow> generations_;
};

}  // namespace hybrid::gui
