// RunStore readers for runs. Each reader is one query (one snapshot); readers that
// need several (load_profile, events) run inside one read transaction.
#include <fmt/format.h>

#include <unordered_map>

#include "profiler/store/connection.h"
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

namespace {

constexpr const char* kRunColumns =
    "id, name, config_json, host, device, backend, world_size, dtype, zero_stage, micro_batch, "
    "grad_accum, seq_len, n_params, git_revision, hybrid_version, started_at, finished_at, "
    "status, error, summary_json, writer_pid, writer_host, last_update, source";

}  // namespace

RunInfo RunStore::read_run_row(store::Statement& st) {
  RunInfo r;
  r.id = st.i64(0);
  r.name = st.text(1);
  r.config_json = st.text(2);
  r.host = st.text(3);
  r.device = st.text(4);
  r.backend = st.text(5);
  r.world_size = int(st.i64(6));
  r.dtype = st.text(7);
  r.zero_stage = int(st.i64(8));
  r.micro_batch = int(st.i64(9));
  r.grad_accum = int(st.i64(10));
  r.seq_len = int(st.i64(11));
  r.n_params = st.u64(12);
  r.git_revision = st.text(13);
  r.hybrid_version = st.text(14);
  r.started_at = st.f64(15);
  r.finished_at = st.opt_f64(16);
  r.status = read_stored(path(), fmt::format("run {}", r.id),
                         [&] { return parse_run_status(st.text(17)); });
  r.error = st.text(18);
  r.summary_json = st.text(19);
  r.writer_pid = st.i64(20);
  r.writer_host = st.text(21);
  r.last_update = st.f64(22);
  r.source = st.text(23);
  return r;
}

std::vector<RunInfo> RunStore::list_runs() {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(fmt::format("SELECT {} FROM runs ORDER BY id", kRunColumns));
  std::vector<RunInfo> out;
  while (st.step()) out.push_back(read_run_row(st));
  return out;
}

std::optional<RunInfo> RunStore::find_run_unlocked(int64_t run_id) {
  auto st = conn_->prepare(fmt::format("SELECT {} FROM runs WHERE id = ?1", kRunColumns));
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

std::vector<RankInfo> RunStore::ranks_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT rank, host, pid, epoch_unix_ns, local_rank, local_size, threads, host_memory_bytes, "
      "pipeline_stage FROM run_ranks WHERE run_id = ?1 ORDER BY rank");
  st.bind(run_id);
  std::vector<RankInfo> out;
  while (st.step())
    out.push_back({int(st.i64(0)), st.text(1), st.i64(2), st.i64(3), int(st.i64(4)), int(st.i64(5)),
                   int(st.i64(6)), st.u64(7), int(st.i64(8))});
  return out;
}

std::vector<StepRow> RunStore::steps_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT step, loss, lr, loss_scale, skipped, grad_norm, step_ms, tokens_per_s, flops_per_s "
      "FROM steps WHERE run_id = ?1 ORDER BY step");
  st.bind(run_id);
  std::vector<StepRow> out;
  while (st.step())
    out.push_back({st.i64(0), st.f64(1), st.f64(2), st.f64(3), st.i64(4) != 0, st.f64(5), st.f64(6),
                   st.f64(7), st.f64(8)});
  return out;
}

std::vector<StepRankRow> RunStore::step_ranks_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT step, rank, compute_ms, comm_ms, exposed_comm_ms, bubble_ms FROM step_ranks "
      "WHERE run_id = ?1 ORDER BY step, rank");
  st.bind(run_id);
  std::vector<StepRankRow> out;
  while (st.step())
    out.push_back({st.i64(0), int(st.i64(1)), st.f64(2), st.f64(3), st.f64(4), st.f64(5)});
  return out;
}

std::vector<StepTimerRow> RunStore::step_timers_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT step, rank, name, ms FROM step_timers WHERE run_id = ?1 ORDER BY step, rank, name");
  st.bind(run_id);
  std::vector<StepTimerRow> out;
  while (st.step()) out.push_back({st.i64(0), int(st.i64(1)), st.text(2), st.f64(3)});
  return out;
}

std::vector<ModuleInfo> RunStore::modules_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT module_id, parent_id, name, type, depth, n_params, activation_bytes FROM modules "
      "WHERE run_id = ?1 ORDER BY module_id");
  st.bind(run_id);
  std::vector<ModuleInfo> out;
  while (st.step())
    out.push_back({int32_t(st.i64(0)), int32_t(st.opt_i64(1).value_or(-1)), st.text(2), st.text(3),
                   int(st.i64(4)), st.u64(5), st.u64(6)});
  return out;
}

std::vector<LayerStat> RunStore::layer_stats_unlocked(int64_t run_id, std::optional<int> rank) {
  auto st = conn_->prepare(
      "SELECT rank, module_id, step, fwd_ns, bwd_ns, fwd_flops, bwd_flops, fwd_macs, bwd_macs, "
      "calls, host_fwd_ns, host_bwd_ns, recompute_ns, recompute_flops, host_recompute_ns "
      "FROM layer_stats "
      "WHERE run_id = ?1 AND (?2 IS NULL OR rank = ?2) ORDER BY step, rank, module_id");
  st.bind(run_id, rank);
  std::vector<LayerStat> out;
  while (st.step())
    out.push_back({int(st.i64(0)), int32_t(st.i64(1)), st.i64(2), st.i64(3), st.i64(4), st.u64(5),
                   st.u64(6), st.u64(7), st.u64(8), st.i64(9), st.i64(10), st.i64(11), st.i64(12),
                   st.u64(13), st.i64(14)});
  return out;
}

std::vector<CommStatRow> RunStore::comm_stats_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT rank, op, bytes, count, total_ns, min_ns, max_ns, algbw_gbps, busbw_gbps, link, "
      "\"group\" FROM comm_stats WHERE run_id = ?1 ORDER BY op, \"group\", link DESC, bytes, rank");
  st.bind(run_id);
  std::vector<CommStatRow> out;
  while (st.step())
    out.push_back({int(st.i64(0)), st.text(1), st.u64(2), st.i64(3), st.i64(4), st.i64(5),
                   st.i64(6), st.f64(7), st.f64(8), st.text(9), st.text(10)});
  return out;
}

std::vector<MemoryRow> RunStore::memory_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT rank, category, current_bytes, peak_bytes, predicted_bytes FROM memory "
      "WHERE run_id = ?1 ORDER BY rank, category");
  st.bind(run_id);
  std::vector<MemoryRow> out;
  while (st.step())
    out.push_back({int(st.i64(0)), st.text(1), st.u64(2), st.u64(3), st.opt_u64(4)});
  return out;
}

std::vector<GpuRankTimeline> RunStore::gpu_timeline_unlocked(int64_t run_id) {
  auto st = conn_->prepare(
      "SELECT rank, first_start_ns, last_end_ns, idle_ns, compute_ns, non_compute_ns, comm_ns, "
      "memory_ns, comm_overlap_ns, computation_only_ns, communication_only_ns, "
      "computation_communication_ns, memory_only_ns, computation_memory_ns, "
      "communication_memory_ns, all_three_ns, computation_kernels, communication_kernels, "
      "memory_records FROM gpu_timeline WHERE run_id = ?1 ORDER BY rank");
  st.bind(run_id);
  std::vector<GpuRankTimeline> out;
  while (st.step()) {
    GpuRankTimeline t;
    t.rank = int(st.i64(0));
    t.first_start_ns = st.i64(1);
    t.last_end_ns = st.i64(2);
    t.span_ns = t.last_end_ns - t.first_start_ns;
    t.idle_ns = st.i64(3);
    t.compute_ns = st.i64(4);
    t.non_compute_ns = st.i64(5);
    t.comm_ns = st.i64(6);
    t.memory_ns = st.i64(7);
    t.comm_overlap_ns = st.i64(8);
    t.exposed_comm_ns = t.comm_ns - t.comm_overlap_ns;
    t.exclusive_ns[0] = t.idle_ns;
    for (int mask = 1; mask < kGpuWorkMasks; ++mask)
      t.exclusive_ns[size_t(mask)] = st.i64(8 + mask);
    t.computation_kernels = st.u64(16);
    t.communication_kernels = st.u64(17);
    t.memory_records = st.u64(18);
    out.push_back(t);
  }
  return out;
}

std::vector<GpuRankTimeline> RunStore::gpu_timeline(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return gpu_timeline_unlocked(run_id);
}

std::vector<RankInfo> RunStore::ranks(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return ranks_unlocked(run_id);
}
std::vector<StepRow> RunStore::steps(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return steps_unlocked(run_id);
}
std::vector<StepRankRow> RunStore::step_ranks(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return step_ranks_unlocked(run_id);
}
std::vector<StepTimerRow> RunStore::step_timers(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return step_timers_unlocked(run_id);
}
std::vector<ModuleInfo> RunStore::modules(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return modules_unlocked(run_id);
}
std::vector<LayerStat> RunStore::layer_stats(int64_t run_id, std::optional<int> rank) {
  std::lock_guard lock(mutex_);
  return layer_stats_unlocked(run_id, rank);
}
std::vector<CommStatRow> RunStore::comm_stats(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return comm_stats_unlocked(run_id);
}
std::vector<MemoryRow> RunStore::memory(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return memory_unlocked(run_id);
}

RunProfile RunStore::load_profile(int64_t run_id) {
  std::lock_guard lock(mutex_);
  return conn_->read_transaction([&] {
    RunProfile p;
    auto run = find_run_unlocked(run_id);
    if (!run) throw StoreError(fmt::format("database {}: run {} not found", path(), run_id));
    p.run = std::move(*run);
    p.ranks = ranks_unlocked(run_id);
    p.steps = steps_unlocked(run_id);
    p.step_ranks = step_ranks_unlocked(run_id);
    p.step_timers = step_timers_unlocked(run_id);
    p.modules = modules_unlocked(run_id);
    p.layers = layer_stats_unlocked(run_id, std::nullopt);
    p.comm = comm_stats_unlocked(run_id);
    p.memory = memory_unlocked(run_id);
    p.gpu = gpu_timeline_unlocked(run_id);
    return p;
  });
}

EventSet RunStore::events(int64_t run_id, const EventFilter& filter) {
  std::lock_guard lock(mutex_);
  // Only the filters given appear in the SQL, so the (run, rank, step) index serves them.
  std::string sql =
      "SELECT e.rank, e.step, e.lane, e.category, e.module_id, e.start_ns, e.dur_ns, e.bytes, "
      "e.flops, e.name_id, n.name, e.scope FROM events e JOIN event_names n ON n.id = e.name_id "
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
  while (st.step()) {
    Event e;
    e.rank = uint16_t(st.i64(0));
    e.step = int32_t(st.i64(1));
    e.lane = uint16_t(st.i64(2));
    const int64_t cat = st.i64(3);
    e.category = cat >= 0 && cat < kCategoryCount ? Category(cat) : Category::other;
    e.module_id = int32_t(st.i64(4));
    e.start_ns = st.i64(5);
    e.dur_ns = st.i64(6);
    e.bytes = st.u64(7);
    e.flops = st.u64(8);
    auto [it, inserted] = local.try_emplace(st.i64(9), uint32_t(out.names.size()));
    if (inserted) out.names.push_back(st.text(10));
    e.name_id = it->second;
    const int64_t scope = st.i64(11);
    e.scope = scope >= 0 && scope < kCategoryCount ? Category(scope) : Category::other;
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
