// RunStore readers for runs. Each reader is one query (one snapshot); readers that
// need several (load_profile, events) run inside one read transaction.
#include <fmt/format.h>

#include <unordered_map>

#include "profiler/store/connection.h"
#include "profiler/store/row_sql.h"
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

namespace {

using store::Connection;
using store::read_rows;

// The order each of a run's tables reads back in.
template <class Row>
constexpr const char* kOrder = nullptr;
template <>
constexpr const char* kOrder<RankInfo> = "rank";
template <>
constexpr const char* kOrder<StepRow> = "step";
template <>
constexpr const char* kOrder<StepRankRow> = "step, rank";
template <>
constexpr const char* kOrder<StepTimerRow> = "step, rank, name";
template <>
constexpr const char* kOrder<ModuleInfo> = "module_id";
template <>
constexpr const char* kOrder<CommStatRow> = "op, \"group\", link DESC, bytes, rank";
template <>
constexpr const char* kOrder<MemoryRow> = "rank, category";
template <>
constexpr const char* kOrder<GpuRankTimeline> = "rank";

template <class Row>
std::vector<Row> run_rows(Connection& c, int64_t run_id) {
  static const std::string rest = fmt::format("WHERE run_id = ?1 ORDER BY {}", kOrder<Row>);
  return read_rows<Row>(c, rest, run_id);
}

std::vector<LayerStat> layer_stats_of(Connection& c, int64_t run_id, std::optional<int> rank) {
  return read_rows<LayerStat>(
      c, "WHERE run_id = ?1 AND (?2 IS NULL OR rank = ?2) ORDER BY step, rank, module_id", run_id,
      rank);
}

}  // namespace

RunInfo RunStore::read_run_row(store::Statement& st) {
  RunInfo r;
  r.id = st.i64(0);
  read_stored(path(), fmt::format("run {}", r.id), [&] { store::read_row(st, 1, r); });
  return r;
}

std::vector<RunInfo> RunStore::list_runs() {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(store::select_sql<RunInfo>({"id"}, "ORDER BY id"));
  std::vector<RunInfo> out;
  while (st.step()) out.push_back(read_run_row(st));
  return out;
}

std::optional<RunInfo> RunStore::find_run_unlocked(int64_t run_id) {
  auto st = conn_->prepare(store::select_sql<RunInfo>({"id"}, "WHERE id = ?1"));
  st.bind(run_id);
  if (!st.step()) return std::nullopt;
  return read_run_row(st);
}

std::optional<RunInfo> RunStore::find_run(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return find_run_unlocked(run_id);
}

RunInfo RunStore::get_run(int64_t run_id) {
  if (auto r = find_run(run_id)) return *r;
  throw StoreError(fmt::format("database {}: run {} not found", path(), run_id));
}

template <class Row>
std::vector<Row> RunStore::locked_run_rows(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return run_rows<Row>(*conn_, run_id);
}

std::vector<RankInfo> RunStore::ranks(int64_t id) { return locked_run_rows<RankInfo>(id); }
std::vector<StepRow> RunStore::steps(int64_t id) { return locked_run_rows<StepRow>(id); }
std::vector<StepRankRow> RunStore::step_ranks(int64_t id) {
  return locked_run_rows<StepRankRow>(id);
}
std::vector<StepTimerRow> RunStore::step_timers(int64_t id) {
  return locked_run_rows<StepTimerRow>(id);
}
std::vector<ModuleInfo> RunStore::modules(int64_t id) { return locked_run_rows<ModuleInfo>(id); }
std::vector<LayerStat> RunStore::layer_stats(int64_t run_id, std::optional<int> rank) {
  std::lock_guard lock(mutex_);
  return layer_stats_of(*conn_, run_id, rank);
}
std::vector<CommStatRow> RunStore::comm_stats(int64_t id) {
  return locked_run_rows<CommStatRow>(id);
}
std::vector<MemoryRow> RunStore::memory(int64_t id) { return locked_run_rows<MemoryRow>(id); }
std::vector<GpuRankTimeline> RunStore::gpu_timeline(int64_t id) {
  return locked_run_rows<GpuRankTimeline>(id);
}

RunProfile RunStore::load_profile(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return conn_->read_transaction([&] {
    RunProfile p;
    auto run = find_run_unlocked(run_id);
    if (!run) throw StoreError(fmt::format("database {}: run {} not found", path(), run_id));
    p.run = std::move(*run);
    p.ranks = run_rows<RankInfo>(*conn_, run_id);
    p.steps = run_rows<StepRow>(*conn_, run_id);
    p.step_ranks = run_rows<StepRankRow>(*conn_, run_id);
    p.step_timers = run_rows<StepTimerRow>(*conn_, run_id);
    p.modules = run_rows<ModuleInfo>(*conn_, run_id);
    p.layers = layer_stats_of(*conn_, run_id, std::nullopt);
    p.comm = run_rows<CommStatRow>(*conn_, run_id);
    p.memory = run_rows<MemoryRow>(*conn_, run_id);
    p.gpu = run_rows<GpuRankTimeline>(*conn_, run_id);
    return p;
  });
}

EventSet RunStore::events(int64_t run_id, const EventFilter& filter) {
  std::lock_guard lock(mutex_);
  // Only the filters given appear in the SQL, so the (run, rank, step) index serves them.
  std::string sql = "SELECT " + store::column_names<Event>("e.") +
                    ", e.name_id, n.name FROM events e JOIN event_names n ON n.id = e.name_id "
                    "WHERE e.run_id = ?1";
  if (filter.rank) sql += " AND e.rank = ?2";
  if (filter.step_min) sql += " AND e.step >= ?3";
  if (filter.step_max) sql += " AND e.step <= ?4";
  sql += " ORDER BY e.rank, e.start_ns";
  auto st = conn_->prepare(sql);
  st.bind(run_id);
  if (filter.rank) st.bind_at(2, *filter.rank);
  if (filter.step_min) st.bind_at(3, *filter.step_min);
  if (filter.step_max) st.bind_at(4, *filter.step_max);
  EventSet out;
  std::unordered_map<int64_t, uint32_t> local;  // store name id → index into out.names
  constexpr int kNameId = int(std::tuple_size_v<decltype(columns::Table<Event>::columns)>);
  while (st.step()) {
    Event e = store::read_row<Event>(st);
    auto [it, inserted] = local.try_emplace(st.i64(kNameId), uint32_t(out.names.size()));
    if (inserted) out.names.push_back(st.text(kNameId + 1));
    e.name_id = it->second;
    out.events.push_back(e);
  }
  return out;
}

int64_t RunStore::event_count(int64_t run_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare("SELECT count(*) FROM events WHERE run_id = ?1");
  st.bind(run_id);
  return st.step() ? st.i64(0) : 0;
}

}  // namespace hybrid::profiler
