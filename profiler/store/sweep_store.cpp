// RunStore: the autotuner's tables (sweeps, trials, pruned candidates, probes).
#include <fmt/format.h>

#include "base/host.h"
#include "profiler/store/connection.h"
#include "profiler/store/process_info.h"
#include "profiler/store/row_sql.h"
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

namespace {

using store::bind_row;
using store::insert_sql;
using store::select_sql;

// A row whose status the reader cannot parse is named by its id (result column 0).
template <class Row>
Row read_with_id(store::Statement& st, const std::string& db, const char* what) {
  Row r;
  r.id = st.i64(0);
  read_stored(db, fmt::format("{} {}", what, r.id), [&] { store::read_row(st, 1, r); });
  return r;
}

}  // namespace

int64_t RunStore::create_sweep(const SweepInfo& info) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    SweepInfo row = info;
    row.created_at = store::unix_now();
    row.finished_at.reset();
    auto st = conn_->prepare(insert_sql<SweepInfo>("INSERT", {}));
    bind_row(st, 1, row);
    st.run();
    return conn_->last_insert_rowid();
  });
}

void RunStore::set_sweep_status(int64_t sweep_id, SweepStatus status) {
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] {
    auto st = conn_->prepare("UPDATE sweeps SET status = ?2, finished_at = ?3 WHERE id = ?1");
    st.bind(sweep_id, to_string(status),
            status == SweepStatus::running ? std::nullopt : std::optional(store::unix_now()))
        .run();
    if (conn_->changes() == 0)
      throw StoreError(fmt::format("database {}: sweep {} not found", path(), sweep_id));
  });
}

int64_t RunStore::upsert_trial(const TrialRow& t) {
  if (t.key.empty())
    throw std::invalid_argument(
        fmt::format("upsert_trial: sweep {} trial has an empty key", t.sweep_id));
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    static const std::string sql = [] {
      // Every column is rewritten on conflict but the key and the creation time.
      std::string update;
      columns::for_each_column<TrialRow>([&](const auto& c) {
        const std::string_view name = c.name;
        if (name == "sweep_id" || name == "key" || name == "created_at") return;
        update += fmt::format("{}{} = excluded.{}", update.empty() ? "" : ", ", name, name);
      });
      return insert_sql<TrialRow>("INSERT", {}) + " ON CONFLICT (sweep_id, key) DO UPDATE SET " +
             update + " RETURNING id";
    }();
    TrialRow row = t;
    row.created_at = row.updated_at = store::unix_now();
    auto st = conn_->prepare(sql);
    bind_row(st, 1, row);
    if (!st.step())
      throw StoreError(
          fmt::format("database {}: upsert of trial '{}' returned no id", path(), t.key));
    const int64_t id = st.i64(0);
    st.run();
    return id;
  });
}

void RunStore::add_pruned(int64_t sweep_id, std::span<const PrunedCandidate> rows) {
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] { store::insert_rows(*conn_, "sweep_id", sweep_id, rows); });
}

int64_t RunStore::add_probe(const ProbeResult& probe) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    ProbeResult row = probe;
    row.created_at = store::unix_now();
    if (row.host.empty()) row.host = base::host_name();
    auto st = conn_->prepare(insert_sql<ProbeResult>("INSERT", {}));
    bind_row(st, 1, row);
    st.run();
    const int64_t id = conn_->last_insert_rowid();
    store::insert_rows<BandwidthSample>(*conn_, "probe_id", id, probe.bandwidth);
    return id;
  });
}

std::vector<SweepInfo> RunStore::sweeps() {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(select_sql<SweepInfo>({"id"}, "ORDER BY id"));
  std::vector<SweepInfo> out;
  while (st.step()) out.push_back(read_with_id<SweepInfo>(st, path(), "sweep"));
  return out;
}

SweepInfo RunStore::get_sweep(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(select_sql<SweepInfo>({"id"}, "WHERE id = ?1"));
  st.bind(sweep_id);
  if (!st.step())
    throw StoreError(fmt::format("database {}: sweep {} not found", path(), sweep_id));
  return read_with_id<SweepInfo>(st, path(), "sweep");
}

std::vector<TrialRow> RunStore::trials(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(select_sql<TrialRow>({"id"}, "WHERE sweep_id = ?1 ORDER BY id"));
  st.bind(sweep_id);
  std::vector<TrialRow> out;
  while (st.step()) out.push_back(read_with_id<TrialRow>(st, path(), "trial"));
  return out;
}

std::optional<TrialRow> RunStore::find_trial(int64_t sweep_id, std::string_view key) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(select_sql<TrialRow>({"id"}, "WHERE sweep_id = ?1 AND key = ?2"));
  st.bind(sweep_id, key);
  if (!st.step()) return std::nullopt;
  return read_with_id<TrialRow>(st, path(), "trial");
}

int64_t RunStore::add_tie_break(const TieBreak& tb) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    TieBreak row = tb;
    row.created_at = store::unix_now();
    auto st = conn_->prepare(insert_sql<TieBreak>("INSERT", {}));
    bind_row(st, 1, row);
    st.run();
    return conn_->last_insert_rowid();
  });
}

std::vector<TieBreak> RunStore::tie_breaks(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(select_sql<TieBreak>({"id"}, "WHERE sweep_id = ?1 ORDER BY id"));
  st.bind(sweep_id);
  std::vector<TieBreak> out;
  while (st.step()) out.push_back(read_with_id<TieBreak>(st, path(), "tie break"));
  return out;
}

std::vector<PrunedCandidate> RunStore::pruned(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  return store::read_rows<PrunedCandidate>(*conn_, "WHERE sweep_id = ?1 ORDER BY key", sweep_id);
}

std::optional<ProbeResult> RunStore::latest_probe(std::optional<std::string_view> host) {
  std::lock_guard lock(mutex_);
  return conn_->read_transaction([&]() -> std::optional<ProbeResult> {
    auto st = conn_->prepare(select_sql<ProbeResult>(
        {"id"}, "WHERE (?1 IS NULL OR host = ?1) ORDER BY created_at DESC, id DESC LIMIT 1"));
    st.bind(host);
    if (!st.step()) return std::nullopt;
    ProbeResult p = read_with_id<ProbeResult>(st, path(), "probe");
    p.bandwidth = store::read_rows<BandwidthSample>(
        *conn_, "WHERE probe_id = ?1 ORDER BY op, link DESC, bytes", p.id);
    return p;
  });
}

}  // namespace hybrid::profiler
