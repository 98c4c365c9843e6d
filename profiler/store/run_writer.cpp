// RunStore writers for runs: one write transaction per call, cached statements,
// and a heartbeat (runs.last_update) with every write to a run. The row inserts
// are free functions over a connection inside a transaction, so that write_run
// can store a whole run in one.
#include <fmt/format.h>

#include <functional>

#include "base/host.h"
#include "profiler/rank_rows.h"
#include "profiler/store/connection.h"
#include "profiler/store/process_info.h"
#include "profiler/store/row_sql.h"
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

namespace {

using store::Connection;

using store::bind_row;
using store::insert_rows;

// The run as given, with the writer's (this process's) identity and times.
int64_t insert_run(Connection& c, const RunInfo& info, RunStatus status, double started_at,
                   int64_t pid, const std::string& host, int64_t writer_start, double now) {
  RunInfo row = info;
  if (row.host.empty()) row.host = host;
  row.status = status;
  row.started_at = started_at;
  row.finished_at =
      status == RunStatus::running ? std::nullopt : std::optional(info.finished_at.value_or(now));
  row.writer_pid = pid;
  row.writer_host = host;
  row.last_update = now;
  auto st = c.prepare(store::insert_sql<RunInfo>("INSERT", {"writer_start"}));
  st.bind(writer_start);
  bind_row(st, 2, row);
  st.run();
  return c.last_insert_rowid();
}

void insert_rank(Connection& c, int64_t run_id, const RankInfo& r) {
  insert_rows<RankInfo>(c, "run_id", run_id, {&r, 1});
}

// Checked before any write: nothing is written for bad input.
void check_event_names(std::span<const Event> events, std::span<const std::string> names) {
  for (const Event& e : events)
    if (e.name_id >= names.size())
      throw std::invalid_argument(fmt::format(
          "add_events: event name_id {} is outside the {} names given", e.name_id, names.size()));
}

void insert_events(Connection& c, int64_t run_id, std::span<const Event> events,
                   std::span<const std::string> names) {
  std::vector<int64_t> store_ids(names.size(), -1);
  for (const Event& e : events) store_ids[e.name_id] = 0;  // used
  auto intern = c.prepare("INSERT OR IGNORE INTO event_names (name) VALUES (?1)");
  auto lookup = c.prepare("SELECT id FROM event_names WHERE name = ?1");
  for (size_t i = 0; i < names.size(); ++i) {
    if (store_ids[i] < 0) continue;
    intern.bind(names[i]).run();
    lookup.bind(names[i]);
    if (!lookup.step())
      throw StoreError(fmt::format("database {}: event name '{}' vanished", c.path(), names[i]));
    store_ids[i] = lookup.i64(0);
    lookup.run();  // finish and reset
  }
  auto st = c.prepare(store::insert_sql<Event>("INSERT", {"run_id", "name_id"}));
  for (const Event& e : events) {
    st.bind(run_id, store_ids[e.name_id]);
    bind_row(st, 3, e);
    st.run();
  }
}

}  // namespace

int64_t RunStore::create_run(const RunInfo& info) {
  std::lock_guard lock(mutex_);
  const double now = store::unix_now();
  const int64_t pid = store::this_pid();
  const std::string host = base::host_name();
  return conn_->write_transaction([&] {
    RunInfo running = info;
    running.finished_at.reset();
    running.error.clear();
    running.summary_json = "{}";
    return insert_run(*conn_, running, RunStatus::running,
                      info.started_at > 0 ? info.started_at : now, pid, host,
                      store::process_start_ticks(pid), now);
  });
}

int64_t RunStore::write_run(const RunRecord& r) {
  if (r.run.status == RunStatus::running)
    throw std::invalid_argument("write_run: a run written whole must be finished, not 'running'");
  check_event_names(r.events.events, r.events.names);
  std::lock_guard lock(mutex_);
  const double now = store::unix_now();
  const int64_t pid = store::this_pid();
  const std::string host = base::host_name();
  return conn_->write_transaction([&] {
    // The run's host is what the record says (an imported trace's, maybe none),
    // never this machine's.
    RunInfo info = r.run;
    if (info.host.empty())
      info.host.push_back('-');  // (not = "-": GCC 12 -Wrestrict false positive)
    const int64_t id =
        insert_run(*conn_, info, r.run.status, r.run.started_at > 0 ? r.run.started_at : now, pid,
                   host, store::process_start_ticks(pid), now);
    insert_rows<RankInfo>(*conn_, "run_id", id, r.ranks);
    insert_rows<ModuleInfo>(*conn_, "run_id", id, r.modules);
    insert_rows<StepRow>(*conn_, "run_id", id, r.steps);
    insert_rows<StepRankRow>(*conn_, "run_id", id, r.step_ranks);
    insert_rows<LayerStat>(*conn_, "run_id", id, r.layers);
    insert_rows<GpuRankTimeline>(*conn_, "run_id", id, r.gpu);
    insert_events(*conn_, id, r.events.events, r.events.names);
    return id;
  });
}

void RunStore::update_run(const RunInfo& info) {
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] {
    static const std::string sql = [] {
      std::string set;
      int i = 2;
      columns::for_each(columns::Table<RunInfo>::description, [&](const auto& c) {
        set += fmt::format("{}{} = ?{}", set.empty() ? "" : ", ", c.name, i++);
      });
      return "UPDATE runs SET " + set + " WHERE id = ?1";
    }();
    auto st = conn_->prepare(sql);
    st.bind(info.id);
    bind_row(st, 2, info, columns::Table<RunInfo>::description);
    st.run();
    touch(info.id);
  });
}

void RunStore::finish_run(int64_t run_id, RunStatus status, std::string_view error,
                          std::string_view summary_json) {
  if (status == RunStatus::running)
    throw std::invalid_argument(
        fmt::format("finish_run: run {} cannot finish with status 'running'", run_id));
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] {
    touch(run_id);
    auto st = conn_->prepare(
        "UPDATE runs SET status = ?2, error = ?3, summary_json = ?4, finished_at = ?5 "
        "WHERE id = ?1");
    st.bind(run_id, to_string(status), error, summary_json, store::unix_now()).run();
  });
}

void RunStore::heartbeat(int64_t run_id) {
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] { touch(run_id); });
}

void RunStore::register_rank(int64_t run_id, int rank, int64_t epoch_unix_ns) {
  RankInfo info;
  info.rank = rank;
  info.epoch_unix_ns = epoch_unix_ns;
  register_rank(run_id, std::move(info));
}

void RunStore::register_rank(int64_t run_id, RankInfo info) {
  info.host = base::host_name();
  info.pid = store::this_pid();
  write_to_run(run_id, [&](Connection& c) { insert_rank(c, run_id, info); });
}

void RunStore::write_to_run(int64_t run_id, const std::function<void(store::Connection&)>& body) {
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] {
    touch(run_id);
    body(*conn_);
  });
}

template <class Row>
void RunStore::add_rows(int64_t run_id, std::span<const Row> rows) {
  write_to_run(run_id, [&](Connection& c) { insert_rows(c, "run_id", run_id, rows); });
}

void RunStore::add_steps(int64_t id, std::span<const StepRow> rows) { add_rows(id, rows); }
void RunStore::add_step_ranks(int64_t id, std::span<const StepRankRow> rows) { add_rows(id, rows); }
void RunStore::add_step_timers(int64_t id, std::span<const StepTimerRow> rows) {
  add_rows(id, rows);
}
void RunStore::add_modules(int64_t id, std::span<const ModuleInfo> rows) { add_rows(id, rows); }
void RunStore::add_layer_stats(int64_t id, std::span<const LayerStat> rows) { add_rows(id, rows); }
void RunStore::add_comm_stats(int64_t id, std::span<const CommStatRow> rows) { add_rows(id, rows); }
void RunStore::add_memory(int64_t id, std::span<const MemoryRow> rows) { add_rows(id, rows); }
void RunStore::add_gpu_timeline(int64_t id, std::span<const GpuRankTimeline> rows) {
  add_rows(id, rows);
}

void RunStore::add_rank_rows(int64_t id, const RankRows& r) {
  check_event_names(r.events.events, r.events.names);
  write_to_run(id, [&](Connection& c) {
    insert_rank(c, id, r.rank);
    insert_rows<StepRankRow>(c, "run_id", id, r.step_ranks);
    insert_rows<StepTimerRow>(c, "run_id", id, r.step_timers);
    insert_rows<LayerStat>(c, "run_id", id, r.layers);
    insert_rows<GpuRankTimeline>(c, "run_id", id, r.gpu);
    insert_events(c, id, r.events.events, r.events.names);
    insert_rows<CommStatRow>(c, "run_id", id, r.comm);
    insert_rows<MemoryRow>(c, "run_id", id, r.memory);
  });
}

void RunStore::add_events(int64_t run_id, std::span<const Event> events,
                          std::span<const std::string> names) {
  check_event_names(events, names);
  write_to_run(run_id, [&](Connection& c) { insert_events(c, run_id, events, names); });
}

}  // namespace hybrid::profiler
