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
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

namespace {

using store::Connection;

int64_t insert_run(Connection& c, const RunInfo& info, RunStatus status, double started_at,
                   int64_t pid, const std::string& host, int64_t writer_start, double now) {
  auto st = c.prepare(
      "INSERT INTO runs (name, config_json, host, device, backend, world_size, dtype, "
      "zero_stage, micro_batch, grad_accum, seq_len, n_params, git_revision, hybrid_version, "
      "started_at, status, writer_pid, writer_host, writer_start, last_update, source, "
      "finished_at, error, summary_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
      "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)");
  st.bind(
        info.name, info.config_json, info.host.empty() ? host : info.host, info.device,
        info.backend, info.world_size, info.dtype, info.zero_stage, info.micro_batch,
        info.grad_accum, info.seq_len, info.n_params, info.git_revision, info.hybrid_version,
        started_at, to_string(status), pid, host, writer_start, now, info.source,
        status == RunStatus::running ? std::nullopt : std::optional(info.finished_at.value_or(now)),
        info.error, info.summary_json)
      .run();
  return c.last_insert_rowid();
}

void insert_rank(Connection& c, int64_t run_id, const RankInfo& r) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO run_ranks (run_id, rank, host, pid, epoch_unix_ns, local_rank, "
      "local_size, threads, host_memory_bytes, pipeline_stage) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  st.bind(run_id, r.rank, r.host, r.pid, r.epoch_unix_ns, r.local_rank, r.local_size, r.threads,
          r.host_memory_bytes, r.pipeline_stage)
      .run();
}

void insert_steps(Connection& c, int64_t run_id, std::span<const StepRow> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO steps (run_id, step, loss, lr, loss_scale, skipped, grad_norm, "
      "step_ms, tokens_per_s, flops_per_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  for (const auto& r : rows)
    st.bind(run_id, r.step, r.loss, r.lr, r.loss_scale, r.skipped, r.grad_norm, r.step_ms,
            r.tokens_per_s, r.flops_per_s)
        .run();
}

void insert_step_ranks(Connection& c, int64_t run_id, std::span<const StepRankRow> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO step_ranks (run_id, step, rank, compute_ms, comm_ms, "
      "exposed_comm_ms, bubble_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  for (const auto& r : rows)
    st.bind(run_id, r.step, r.rank, r.compute_ms, r.comm_ms, r.exposed_comm_ms, r.bubble_ms).run();
}

void insert_step_timers(Connection& c, int64_t run_id, std::span<const StepTimerRow> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO step_timers (run_id, step, rank, name, ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const auto& r : rows) st.bind(run_id, r.step, r.rank, r.name, r.ms).run();
}

void insert_modules(Connection& c, int64_t run_id, std::span<const ModuleInfo> modules) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO modules (run_id, module_id, parent_id, name, type, depth, "
      "n_params, activation_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  for (const auto& m : modules)
    st.bind(run_id, m.id, m.parent_id >= 0 ? std::optional<int32_t>(m.parent_id) : std::nullopt,
            m.name, m.type, m.depth, m.n_params, m.activation_bytes)
        .run();
}

void insert_layer_stats(Connection& c, int64_t run_id, std::span<const LayerStat> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO layer_stats (run_id, rank, module_id, step, fwd_ns, bwd_ns, "
      "fwd_flops, bwd_flops, fwd_macs, bwd_macs, calls, host_fwd_ns, host_bwd_ns, recompute_ns, "
      "recompute_flops, host_recompute_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  for (const auto& r : rows)
    st.bind(run_id, r.rank, r.module_id, r.step, r.fwd_ns, r.bwd_ns, r.fwd_flops, r.bwd_flops,
            r.fwd_macs, r.bwd_macs, r.calls, r.host_fwd_ns, r.host_bwd_ns, r.recompute_ns,
            r.recompute_flops, r.host_recompute_ns)
        .run();
}

void insert_comm_stats(Connection& c, int64_t run_id, std::span<const CommStatRow> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO comm_stats (run_id, rank, op, bytes, count, total_ns, min_ns, "
      "max_ns, algbw_gbps, busbw_gbps, link, \"group\") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
      "?9, ?10, ?11, ?12)");
  for (const auto& r : rows)
    st.bind(run_id, r.rank, r.op, r.bytes, r.count, r.total_ns, r.min_ns, r.max_ns, r.algbw_gbps,
            r.busbw_gbps, r.link, r.group)
        .run();
}

void insert_memory(Connection& c, int64_t run_id, std::span<const MemoryRow> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO memory (run_id, rank, category, current_bytes, peak_bytes, "
      "predicted_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  for (const auto& r : rows)
    st.bind(run_id, r.rank, r.category, r.current_bytes, r.peak_bytes, r.predicted_bytes).run();
}

void insert_gpu_timeline(Connection& c, int64_t run_id, std::span<const GpuRankTimeline> rows) {
  auto st = c.prepare(
      "INSERT OR REPLACE INTO gpu_timeline (run_id, rank, first_start_ns, last_end_ns, idle_ns, "
      "compute_ns, non_compute_ns, comm_ns, memory_ns, comm_overlap_ns, computation_only_ns, "
      "communication_only_ns, computation_communication_ns, memory_only_ns, "
      "computation_memory_ns, communication_memory_ns, all_three_ns, computation_kernels, "
      "communication_kernels, memory_records) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
      "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
  for (const auto& t : rows) {
    const auto& x = t.exclusive_ns;
    st.bind(run_id, t.rank, t.first_start_ns, t.last_end_ns, t.idle_ns, t.compute_ns,
            t.non_compute_ns, t.comm_ns, t.memory_ns, t.comm_overlap_ns, x[1], x[2], x[3], x[4],
            x[5], x[6], x[7], t.computation_kernels, t.communication_kernels, t.memory_records)
        .run();
  }
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
  auto st = c.prepare(
      "INSERT INTO events (run_id, rank, step, lane, category, name_id, module_id, start_ns, "
      "dur_ns, bytes, flops, scope) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  for (const Event& e : events)
    st.bind(run_id, e.rank, e.step, e.lane, uint8_t(e.category), store_ids[e.name_id], e.module_id,
            e.start_ns, e.dur_ns, e.bytes, e.flops, uint8_t(e.scope))
        .run();
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
    for (const RankInfo& rank : r.ranks) insert_rank(*conn_, id, rank);
    insert_modules(*conn_, id, r.modules);
    insert_steps(*conn_, id, r.steps);
    insert_step_ranks(*conn_, id, r.step_ranks);
    insert_layer_stats(*conn_, id, r.layers);
    insert_gpu_timeline(*conn_, id, r.gpu);
    insert_events(*conn_, id, r.events.events, r.events.names);
    return id;
  });
}

void RunStore::update_run(const RunInfo& info) {
  std::lock_guard lock(mutex_);
  conn_->write_transaction([&] {
    auto st = conn_->prepare(
        "UPDATE runs SET name = ?2, config_json = ?3, host = ?4, device = ?5, backend = ?6, "
        "world_size = ?7, dtype = ?8, zero_stage = ?9, micro_batch = ?10, grad_accum = ?11, "
        "seq_len = ?12, n_params = ?13, git_revision = ?14, hybrid_version = ?15, "
        "summary_json = ?16 WHERE id = ?1");
    st.bind(info.id, info.name, info.config_json, info.host, info.device, info.backend,
            info.world_size, info.dtype, info.zero_stage, info.micro_batch, info.grad_accum,
            info.seq_len, info.n_params, info.git_revision, info.hybrid_version, info.summary_json)
        .run();
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

void RunStore::add_steps(int64_t id, std::span<const StepRow> rows) {
  write_to_run(id, [&](Connection& c) { insert_steps(c, id, rows); });
}
void RunStore::add_step_ranks(int64_t id, std::span<const StepRankRow> rows) {
  write_to_run(id, [&](Connection& c) { insert_step_ranks(c, id, rows); });
}
void RunStore::add_step_timers(int64_t id, std::span<const StepTimerRow> rows) {
  write_to_run(id, [&](Connection& c) { insert_step_timers(c, id, rows); });
}
void RunStore::add_modules(int64_t id, std::span<const ModuleInfo> modules) {
  write_to_run(id, [&](Connection& c) { insert_modules(c, id, modules); });
}
void RunStore::add_layer_stats(int64_t id, std::span<const LayerStat> rows) {
  write_to_run(id, [&](Connection& c) { insert_layer_stats(c, id, rows); });
}
void RunStore::add_comm_stats(int64_t id, std::span<const CommStatRow> rows) {
  write_to_run(id, [&](Connection& c) { insert_comm_stats(c, id, rows); });
}
void RunStore::add_memory(int64_t id, std::span<const MemoryRow> rows) {
  write_to_run(id, [&](Connection& c) { insert_memory(c, id, rows); });
}
void RunStore::add_gpu_timeline(int64_t id, std::span<const GpuRankTimeline> rows) {
  write_to_run(id, [&](Connection& c) { insert_gpu_timeline(c, id, rows); });
}

void RunStore::add_rank_rows(int64_t id, const RankRows& r) {
  check_event_names(r.events.events, r.events.names);
  write_to_run(id, [&](Connection& c) {
    insert_rank(c, id, r.rank);
    insert_step_ranks(c, id, r.step_ranks);
    insert_step_timers(c, id, r.step_timers);
    insert_layer_stats(c, id, r.layers);
    insert_gpu_timeline(c, id, r.gpu);
    insert_events(c, id, r.events.events, r.events.names);
    insert_comm_stats(c, id, r.comm);
    insert_memory(c, id, r.memory);
  });
}

void RunStore::add_events(int64_t run_id, std::span<const Event> events,
                          std::span<const std::string> names) {
  check_event_names(events, names);
  write_to_run(run_id, [&](Connection& c) { insert_events(c, run_id, events, names); });
}

}  // namespace hybrid::profiler
