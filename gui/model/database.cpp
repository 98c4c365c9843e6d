#include "gui/model/database.h"

#include <fmt/format.h>

#include <system_error>

namespace hybrid::gui {

namespace {

// The store's own messages name the file and the problem; a missing file gets a
// message of its own so the user knows to check the path rather than the file.
std::string open_error(const std::filesystem::path& path, const std::exception& e) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return fmt::format("cannot open {}: no such file (pass the run store, e.g. results/hybrid.db)",
                       path.string());
  // Store errors already name the file.
  const std::string what = e.what();
  if (what.find(path.string()) != std::string::npos) return what;
  return fmt::format("cannot open {}: {}", path.string(), what);
}

const std::vector<profiler::TrialRow> kNoTrials;
const std::vector<profiler::PrunedCandidate> kNoPruned;

}  // namespace

Database::Database(std::filesystem::path path) : path_(std::move(path)) {
  try {
    store_ = std::make_unique<profiler::RunStore>(path_, profiler::OpenMode::read_only);
  } catch (const std::exception& e) {
    error_ = open_error(path_, e);
    return;
  }
  refresh(true);
}

Database::~Database() = default;

bool Database::refresh(bool force) {
  if (!store_) return false;
  try {
    const int64_t version = store_->data_version();
    if (!force && version == data_version_) return false;
    auto runs = store_->list_runs();
    auto sweeps = store_->sweeps();
    std::vector<std::vector<profiler::TrialRow>> trials;
    std::vector<std::vector<profiler::PrunedCandidate>> pruned;
    for (const auto& s : sweeps) {
      trials.push_back(store_->trials(s.id));
      pruned.push_back(store_->pruned(s.id));
    }
    auto generations = store_->generations();
    runs_ = std::move(runs);
    generations_ = std::move(generations);
    sweeps_ = std::move(sweeps);
    trials_ = std::move(trials);
    pruned_ = std::move(pruned);
    data_version_ = version;
    error_.clear();
    ++generation_;
    return true;
  } catch (const std::exception& e) {
    error_ = fmt::format("reading {} failed: {}", path_.string(), e.what());
    return false;
  }
}

const std::vector<profiler::TrialRow>& Database::trials(int64_t sweep_id) const {
  for (size_t i = 0; i < sweeps_.size(); ++i)
    if (sweeps_[i].id == sweep_id) return trials_[i];
  return kNoTrials;
}

const std::vector<profiler::PrunedCandidate>& Database::pruned(int64_t sweep_id) const {
  for (size_t i = 0; i < sweeps_.size(); ++i)
    if (sweeps_[i].id == sweep_id) return pruned_[i];
  return kNoPruned;
}

const profiler::RunInfo* Database::find_run(int64_t run_id) const {
  for (const auto& r : runs_)
    if (r.id == run_id) return &r;
  return nullptr;
}

std::optional<RunData> Database::load_run(int64_t run_id, bool with_events) {
  if (!store_) return std::nullopt;
  try {
    RunData d;
    d.profile = store_->load_profile(run_id);
    d.loaded_last_update = d.profile.run.last_update;
    if (with_events) {
      d.events = store_->events(run_id);
      d.loaded_event_count = int64_t(d.events.events.size());
    } else {
      d.loaded_event_count = store_->event_count(run_id);
    }
    return d;
  } catch (const std::exception& e) {
    error_ = fmt::format("reading run {} from {} failed: {}", run_id, path_.string(), e.what());
    return std::nullopt;
  }
}

bool Database::run_changed(const RunData& data) const {
  const profiler::RunInfo* now = find_run(data.profile.run.id);
  if (!now) return false;
  return now->last_update != data.loaded_last_update || now->status != data.profile.run.status;
}

}  // namespace hybrid::gui
