#include "profiler/import/kineto_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/text.h"
#include "profiler/intervals.h"

namespace hybrid::profiler::import {

namespace {

int64_t floor_us(int64_t ns) { return (ns >= 0 ? ns : ns - 999) / 1000 * 1000; }

// The phase a scope name declares, if any.
std::optional<Category> phase_of(std::string_view name) {
  if (base::contains_ignore_case(name, "backward")) return Category::backward;
  if (base::contains_ignore_case(name, "optimizer")) return Category::optimizer;
  if (base::contains_ignore_case(name, "forward")) return Category::forward;
  return std::nullopt;
}

int32_t step_number(std::string_view name) {  // "ProfilerStep#12" → 12
  const auto hash = name.find('#');
  int32_t n = 0;
  for (size_t i = hash + 1; hash != std::string_view::npos && i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return hash == std::string_view::npos ? -1 : n;
}

}  // namespace

// Modules are scope paths: (parent module, scope name) → id, shared by all ranks.
class ModuleTable {
 public:
  int32_t id(int32_t parent, const std::string& name) {
    auto [it, fresh] = ids_.try_emplace({parent, name}, int32_t(modules_.size()));
    if (fresh) {
      ModuleInfo m;
      m.id = it->second;
      m.parent_id = parent;
      m.name = name;
      m.type = "scope";
      m.depth = parent < 0 ? 0 : modules_[size_t(parent)].depth + 1;
      modules_.push_back(std::move(m));
    }
    return it->second;
  }
  std::vector<ModuleInfo> take() { return std::move(modules_); }

 private:
  std::map<std::pair<int32_t, std::string>, int32_t> ids_;
  std::vector<ModuleInfo> modules_;
};

namespace {

// Where a CPU instant sits: its module (innermost scope), phase and step.
struct Placement {
  int32_t module_id = -1;
  Category phase = Category::other;
  int32_t step = -1;
};

class RankTranslator {
 public:
  RankTranslator(const KinetoTrace& t, int rank, ModuleTable& modules,
                 const KinetoImportOptions& options)
      : t_(t), rank_(rank), modules_(modules), options_(options) {}

  void run(EventSet& out, RankInfo& rank_info) {
    place_launches_and_scopes();
    std::vector<Event> events;
    events.reserve(t_.gpu.size() + t_.scopes.size() + t_.steps.size());
    add_gpu_records(events);
    add_scope_events(events);
    int64_t epoch = INT64_MAX;
    for (const Event& e : events) epoch = std::min(epoch, e.start_ns);
    epoch = events.empty() ? 0 : floor_us(epoch);
    for (Event& e : events) e.start_ns -= epoch;
    std::sort(events.begin(), events.end(),
              [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
    // Names: this trace's table appended to the run's.
    const uint32_t base = uint32_t(out.names.size());
    out.names.insert(out.names.end(), t_.names.begin(), t_.names.end());
    out.events.reserve(out.events.size() + events.size());
    for (Event& e : events) {
      e.name_id += base;
      out.events.push_back(e);
    }
    rank_info.rank = rank_;
    rank_info.host = t_.host;
    rank_info.pid = t_.pid;
    rank_info.epoch_unix_ns = t_.base_time_ns + epoch;
  }

 private:
  // One sweep per thread over its scopes and launches in time order, with the
  // stack of open scopes: gives each scope its module and each launch its place.
  void place_launches_and_scopes() {
    for (const KinetoCpuSpan& s : t_.steps) steps_.push_back(&s);
    std::sort(steps_.begin(), steps_.end(), [](const KinetoCpuSpan* a, const KinetoCpuSpan* b) {
      return a->start_ns < b->start_ns;
    });
    std::map<uint32_t, Intervals> autograd;
    for (const KinetoCpuSpan& a : t_.autograd)
      autograd[a.thread].emplace_back(a.start_ns, a.end_ns);
    for (auto& [thread, u] : autograd) u = merged(std::move(u));

    struct Item {
      int64_t start, end;
      bool scope;
      size_t index;
    };
    std::map<uint32_t, std::vector<Item>> by_thread;
    for (size_t i = 0; i < t_.scopes.size(); ++i)
      by_thread[t_.scopes[i].thread].push_back(
          {t_.scopes[i].start_ns, t_.scopes[i].end_ns, true, i});
    for (size_t i = 0; i < t_.launches.size(); ++i)
      by_thread[t_.launches[i].thread].push_back(
          {t_.launches[i].start_ns, t_.launches[i].end_ns, false, i});
    scope_place_.assign(t_.scopes.size(), {});
    launch_place_.assign(t_.launches.size(), {});
    for (auto& [thread, items] : by_thread) {
      // Outer scopes first at equal starts; a launch after the scopes that start with it.
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        if (a.start != b.start) return a.start < b.start;
        if (a.scope != b.scope) return a.scope;
        return a.end > b.end;
      });
      const auto ag = autograd.find(thread);
      std::vector<std::pair<int64_t, Placement>> open;  // (end, placement) of open scopes
      for (const Item& it : items) {
        while (!open.empty() && open.back().first <= it.start) open.pop_back();
        Placement p = open.empty() ? Placement{} : open.back().second;
        p.step = step_at(it.start);
        const bool in_autograd =
            ag != autograd.end() && covered(ag->second, it.start, it.start + 1) > 0;
        if (it.scope) {
          const std::string& name = t_.names[t_.scopes[it.index].name];
          p.module_id = modules_.id(p.module_id, name);
          if (auto ph = phase_of(name)) p.phase = *ph;
          if (in_autograd) p.phase = Category::backward;
          scope_place_[it.index] = p;
          open.emplace_back(it.end, p);
        } else {
          if (in_autograd) p.phase = Category::backward;
          launch_place_[it.index] = p;
        }
      }
    }
  }

  // Profiler steps follow each other without overlapping: the last one starting
  // at or before t encloses t, if any does.
  int32_t step_at(int64_t t) const {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), t,
                               [](int64_t x, const KinetoCpuSpan* s) { return x < s->start_ns; });
    if (it == steps_.begin() || t >= (*std::prev(it))->end_ns) return -1;
    return step_number(t_.names[(*std::prev(it))->name]);
  }

  void add_gpu_records(std::vector<Event>& events) const {
    std::unordered_map<int64_t, size_t> launch_of;
    for (size_t i = 0; i < t_.launches.size(); ++i)
      launch_of.try_emplace(*t_.launches[i].correlation, i);
    std::optional<int64_t> cutoff;  // launches from the last profiler step on are dropped
    if (options_.hta_compatible && t_.steps.size() >= 2) {
      cutoff = INT64_MIN;
      for (const KinetoCpuSpan& s : t_.steps) cutoff = std::max(*cutoff, s.start_ns);
    }
    for (const KinetoGpuRecord& r : t_.gpu) {
      const auto launch = r.correlation ? launch_of.find(*r.correlation) : launch_of.end();
      if (cutoff && (launch == launch_of.end() || t_.launches[launch->second].start_ns >= *cutoff))
        continue;
      Event e;
      e.rank = uint16_t(rank_);
      e.category = r.category;
      e.name_id = r.name;
      e.bytes = r.bytes;
      int64_t start = r.start_ns, end = r.end_ns;
      if (options_.hta_compatible) {  // float64 µs, start rounded up, end down
        start = int64_t(std::ceil(r.ts_us)) * 1000;
        end = int64_t(std::floor(r.ts_us + r.dur_us)) * 1000;
      }
      e.start_ns = start;
      e.dur_ns = std::max<int64_t>(0, end - start);
      e.lane = uint16_t(r.stream >= 0 && r.stream <= 0xffff - kLaneGpuBase ? kLaneGpuBase + r.stream
                                                                           : 0xffff);
      if (launch != launch_of.end()) {
        const Placement& p = launch_place_[launch->second];
        e.module_id = p.module_id;
        e.scope = p.phase;
        e.step = p.step;
      }
      events.push_back(e);
    }
  }

  // The scopes themselves, on the compute lane, so the timeline shows where the
  // CPU was; profiler steps as `step` events.
  void add_scope_events(std::vector<Event>& events) const {
    for (size_t i = 0; i < t_.scopes.size(); ++i) {
      const KinetoCpuSpan& s = t_.scopes[i];
      const Placement& p = scope_place_[i];
      Event e;
      e.rank = uint16_t(rank_);
      e.lane = kLaneCompute;
      e.category = p.phase;
      e.name_id = s.name;
      e.module_id = p.module_id;
      e.step = p.step;
      e.start_ns = s.start_ns;
      e.dur_ns = s.end_ns - s.start_ns;
      events.push_back(e);
    }
    for (const KinetoCpuSpan& s : t_.steps) {
      Event e;
      e.rank = uint16_t(rank_);
      e.lane = kLaneCompute;
      e.category = Category::step;
      e.name_id = s.name;
      e.step = step_number(t_.names[s.name]);
      e.start_ns = s.start_ns;
      e.dur_ns = s.end_ns - s.start_ns;
      events.push_back(e);
    }
  }

  const KinetoTrace& t_;
  int rank_;
  ModuleTable& modules_;
  const KinetoImportOptions& options_;
  std::vector<Placement> scope_place_, launch_place_;
  std::vector<const KinetoCpuSpan*> steps_;  // by start
};

std::string default_run_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".gz", ".json"})
    if (name.ends_with(ext)) name.resize(name.size() - std::string_view(ext).size());
  return name;
}

}  // namespace

KinetoRunBuilder::KinetoRunBuilder(size_t files, KinetoImportOptions options)
    : files_(files), options_(std::move(options)), modules_(std::make_unique<ModuleTable>()) {
  if (files == 0) throw ImportError("import: no trace files given");
}

KinetoRunBuilder::~KinetoRunBuilder() = default;

void KinetoRunBuilder::add(const KinetoTrace& t) {
  // Ranks: distributedInfo says; a single file without it is rank 0.
  if (!t.rank && files_ > 1)
    throw ImportError(fmt::format(
        "{}: no distributedInfo.rank; when several files are imported each must name its rank",
        t.path));
  const int rank = t.rank.value_or(0);
  if (rank < 0 || rank > 0xffff)
    throw ImportError(fmt::format("{}: rank {} is out of range", t.path, rank));
  auto [it, fresh] = rank_files_.emplace(rank, t.path);
  if (!fresh)
    throw ImportError(fmt::format("{} and {} both claim rank {} (distributedInfo.rank)", it->second,
                                  t.path, rank));
  if (t.world_size) {
    if (world_ && *t.world_size != *world_)
      throw ImportError(fmt::format("{}: world_size {} disagrees with {} of {}", t.path,
                                    *t.world_size, *world_, world_from_));
    world_ = t.world_size;
    world_from_ = t.path;
  }
  if (rank_files_.size() == 1) describe_run(t);
  if (rank == rank_files_.begin()->first) take_steps(t);  // the lowest rank's steps so far

  RankInfo info;
  RankTranslator(t, rank, *modules_, options_).run(record_.events, info);
  record_.ranks.push_back(info);
}

void KinetoRunBuilder::describe_run(const KinetoTrace& first) {
  RunInfo& run = record_.run;
  run.name = options_.run_name.empty() ? default_run_name(first.path) : options_.run_name;
  run.source = "kineto";
  run.backend = "cuda";
  run.host = first.host;
  if (!first.gpu.empty() && first.gpu.front().device >= 0 &&
      size_t(first.gpu.front().device) < first.devices.size())
    run.device = first.devices[size_t(first.gpu.front().device)];
  backend_ = first.backend;
  run.status = RunStatus::ok;
}

// Step rows: the profiler steps, timed by their annotations (a trace has no loss
// or learning rate: NaN and 0).
void KinetoRunBuilder::take_steps(const KinetoTrace& t) {
  record_.steps.clear();
  for (const KinetoCpuSpan& s : t.steps) {
    StepRow row;
    row.step = step_number(t.names[s.name]);
    row.loss = std::numeric_limits<double>::quiet_NaN();
    row.lr = 0;
    row.grad_norm = std::numeric_limits<double>::quiet_NaN();
    row.step_ms = double(s.end_ns - s.start_ns) / 1e6;
    if (row.step >= 0) record_.steps.push_back(row);
  }
  std::sort(record_.steps.begin(), record_.steps.end(),
            [](const StepRow& a, const StepRow& b) { return a.step < b.step; });
}

RunRecord KinetoRunBuilder::finish() {
  const int world_size = world_.value_or(int(rank_files_.size()));
  const auto& [last_rank, last_path] = *rank_files_.rbegin();
  if (last_rank >= world_size)
    throw ImportError(fmt::format("{}: rank {} is not below the world size {}", last_path,
                                  last_rank, world_size));
  RunRecord r = std::move(record_);
  r.run.world_size = world_size;
  r.modules = modules_->take();
  std::sort(r.ranks.begin(), r.ranks.end(),
            [](const RankInfo& a, const RankInfo& b) { return a.rank < b.rank; });
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [rank, path] : rank_files_) files.push_back(path);
  r.run.config_json =
      nlohmann::json{
          {"kineto",
           {{"files", files}, {"hta_compatible", options_.hta_compatible}, {"backend", backend_}}}}
          .dump();
  // Wall-clock times when the trace's clock is unix time (after 2001), else import time.
  std::map<int, int64_t> epoch;
  for (const RankInfo& k : r.ranks) epoch[k.rank] = k.epoch_unix_ns;
  int64_t begin = INT64_MAX, end = INT64_MIN;
  for (const Event& e : r.events.events) {
    begin = std::min(begin, epoch[e.rank] + e.start_ns);
    end = std::max(end, epoch[e.rank] + e.start_ns + e.dur_ns);
  }
  if (begin > int64_t(1e18) && end >= begin) {
    r.run.started_at = double(begin) / 1e9;
    r.run.finished_at = double(end) / 1e9;
  }
  return r;
}

RunRecord translate_kineto(std::span<const KinetoTrace> traces,
                           const KinetoImportOptions& options) {
  KinetoRunBuilder builder(traces.size(), options);
  for (const KinetoTrace& t : traces) builder.add(t);
  return builder.finish();
}

RunRecord import_kineto(std::span<const std::filesystem::path> files,
                        const KinetoImportOptions& options) {
  // One file at a time: a trace is dropped once translated, so memory holds one
  // rank's parsed trace plus the events kept, not every rank's trace at once.
  KinetoRunBuilder builder(files.size(), options);
  for (const auto& f : files) builder.add(read_kineto_trace(f));
  return builder.finish();
}

}  // namespace hybrid::profiler::import
