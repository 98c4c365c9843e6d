// RunStore: the autotuner's tables (sweeps, trials, pruned candidates, probes).
#include <fmt/format.h>

#include "base/host.h"
#include "profiler/store/connection.h"
#include "profiler/store/process_info.h"
#include "profiler/store/run_store.h"

namespace hybrid::profiler {

namespace {

constexpr const char* kTrialColumns =
    "id, sweep_id, key, config_json, status, reason, metric, tokens_per_s, samples_per_s, "
    "flops_per_s, latency_ms, predicted_mem_bytes, peak_mem_bytes, predicted_step_ms, wall_s, "
    "output_tail, run_id, created_at, updated_at, step_count, step_median_ms, step_q1_ms, "
    "step_q3_ms, step_mad_ms, step_cv, step_ci_low_ms, step_ci_high_ms, noisy, attempts";

SweepInfo read_sweep_row(store::Statement& st, const std::string& db) {
  SweepInfo s;
  s.id = st.i64(0);
  s.name = st.text(1);
  s.base_config_json = st.text(2);
  s.space_json = st.text(3);
  s.strategy = st.text(4);
  s.metric = st.text(5);
  s.status = read_stored(db, fmt::format("sweep {}", s.id),
                         [&] { return parse_sweep_status(st.text(6)); });
  s.created_at = st.f64(7);
  s.finished_at = st.opt_f64(8);
  return s;
}

}  // namespace

int64_t RunStore::create_sweep(const SweepInfo& info) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    auto st = conn_->prepare(
        "INSERT INTO sweeps (name, base_config_json, space_json, strategy, metric, status, "
        "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind(info.name, info.base_config_json, info.space_json, info.strategy, info.metric,
            to_string(info.status), store::unix_now())
        .run();
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
    auto st = conn_->prepare(
        "INSERT INTO trials (sweep_id, key, config_json, status, reason, metric, tokens_per_s, "
        "samples_per_s, flops_per_s, latency_ms, predicted_mem_bytes, peak_mem_bytes, "
        "predicted_step_ms, wall_s, output_tail, run_id, created_at, updated_at, step_count, "
        "step_median_ms, step_q1_ms, step_q3_ms, step_mad_ms, step_cv, step_ci_low_ms, "
        "step_ci_high_ms, noisy, attempts) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17, "
        "?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27) "
        "ON CONFLICT (sweep_id, key) DO UPDATE SET config_json = excluded.config_json, "
        "status = excluded.status, reason = excluded.reason, metric = excluded.metric, "
        "tokens_per_s = excluded.tokens_per_s, samples_per_s = excluded.samples_per_s, "
        "flops_per_s = excluded.flops_per_s, latency_ms = excluded.latency_ms, "
        "predicted_mem_bytes = excluded.predicted_mem_bytes, "
        "peak_mem_bytes = excluded.peak_mem_bytes, "
        "predicted_step_ms = excluded.predicted_step_ms, wall_s = excluded.wall_s, "
        "output_tail = excluded.output_tail, run_id = excluded.run_id, "
        "updated_at = excluded.updated_at, step_count = excluded.step_count, "
        "step_median_ms = excluded.step_median_ms, step_q1_ms = excluded.step_q1_ms, "
        "step_q3_ms = excluded.step_q3_ms, step_mad_ms = excluded.step_mad_ms, "
        "step_cv = excluded.step_cv, step_ci_low_ms = excluded.step_ci_low_ms, "
        "step_ci_high_ms = excluded.step_ci_high_ms, noisy = excluded.noisy, "
        "attempts = excluded.attempts RETURNING id");
    const auto sp = [&](double StepSpread::*f) {
      return t.spread ? std::optional((*t.spread).*f) : std::nullopt;
    };
    st.bind(t.sweep_id, t.key, t.config_json, to_string(t.status), t.reason, t.metric,
            t.tokens_per_s, t.samples_per_s, t.flops_per_s, t.latency_ms, t.predicted_mem_bytes,
            t.peak_mem_bytes, t.predicted_step_ms, t.wall_s, t.output_tail, t.run_id,
            store::unix_now(), t.spread ? std::optional(t.spread->count) : std::nullopt,
            sp(&StepSpread::median_ms), sp(&StepSpread::q1_ms), sp(&StepSpread::q3_ms),
            sp(&StepSpread::mad_ms), sp(&StepSpread::cv), sp(&StepSpread::ci_low_ms),
            sp(&StepSpread::ci_high_ms), t.noisy, t.attempts);
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
  conn_->write_transaction([&] {
    auto st = conn_->prepare(
        "INSERT OR REPLACE INTO pruned (sweep_id, key, config_json, predicted_mem_bytes, "
        "budget_bytes, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    for (const auto& p : rows)
      st.bind(sweep_id, p.key, p.config_json, p.predicted_mem_bytes, p.budget_bytes, p.reason)
          .run();
  });
}

int64_t RunStore::add_probe(const ProbeResult& probe) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    auto st = conn_->prepare(
        "INSERT INTO probes (created_at, host, device, world_size, gemm_flops_per_s, gemm_ranks, "
        "host_cpus) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind(store::unix_now(), probe.host.empty() ? base::host_name() : probe.host, probe.device,
            probe.world_size, probe.gemm_flops_per_s, probe.gemm_ranks, probe.host_cpus)
        .run();
    const int64_t id = conn_->last_insert_rowid();
    auto bw = conn_->prepare(
        "INSERT OR REPLACE INTO probe_bandwidth (probe_id, op, bytes, algbw_gbps, busbw_gbps, "
        "link, ranks) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    for (const auto& b : probe.bandwidth)
      bw.bind(id, b.op, b.bytes, b.algbw_gbps, b.busbw_gbps, b.link, b.ranks).run();
    return id;
  });
}

std::vector<SweepInfo> RunStore::sweeps() {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(
      "SELECT id, name, base_config_json, space_json, strategy, metric, status, created_at, "
      "finished_at FROM sweeps ORDER BY id");
  std::vector<SweepInfo> out;
  while (st.step()) out.push_back(read_sweep_row(st, path()));
  return out;
}

SweepInfo RunStore::get_sweep(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(
      "SELECT id, name, base_config_json, space_json, strategy, metric, status, created_at, "
      "finished_at FROM sweeps WHERE id = ?1");
  st.bind(sweep_id);
  if (!st.step())
    throw StoreError(fmt::format("database {}: sweep {} not found", path(), sweep_id));
  return read_sweep_row(st, path());
}

TrialRow RunStore::read_trial_row(store::Statement& st) {
  TrialRow t;
  t.id = st.i64(0);
  t.sweep_id = st.i64(1);
  t.key = st.text(2);
  t.config_json = st.text(3);
  t.status = read_stored(path(), fmt::format("trial {}", t.id),
                         [&] { return parse_trial_status(st.text(4)); });
  t.reason = st.text(5);
  t.metric = st.opt_f64(6);
  t.tokens_per_s = st.opt_f64(7);
  t.samples_per_s = st.opt_f64(8);
  t.flops_per_s = st.opt_f64(9);
  t.latency_ms = st.opt_f64(10);
  t.predicted_mem_bytes = st.opt_u64(11);
  t.peak_mem_bytes = st.opt_u64(12);
  t.predicted_step_ms = st.opt_f64(13);
  t.wall_s = st.opt_f64(14);
  t.output_tail = st.text(15);
  t.run_id = st.opt_i64(16);
  t.created_at = st.f64(17);
  t.updated_at = st.f64(18);
  if (const auto n = st.opt_i64(19)) {
    StepSpread& sp = t.spread.emplace();
    sp.count = *n;
    sp.median_ms = st.f64(20);
    sp.q1_ms = st.f64(21);
    sp.q3_ms = st.f64(22);
    sp.mad_ms = st.f64(23);
    sp.cv = st.f64(24);
    sp.ci_low_ms = st.f64(25);
    sp.ci_high_ms = st.f64(26);
  }
  t.noisy = st.i64(27) != 0;
  t.attempts = int(st.i64(28));
  return t;
}

std::vector<TrialRow> RunStore::trials(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(
      fmt::format("SELECT {} FROM trials WHERE sweep_id = ?1 ORDER BY id", kTrialColumns));
  st.bind(sweep_id);
  std::vector<TrialRow> out;
  while (st.step()) out.push_back(read_trial_row(st));
  return out;
}

std::optional<TrialRow> RunStore::find_trial(int64_t sweep_id, std::string_view key) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(
      fmt::format("SELECT {} FROM trials WHERE sweep_id = ?1 AND key = ?2", kTrialColumns));
  st.bind(sweep_id, key);
  if (!st.step()) return std::nullopt;
  return read_trial_row(st);
}

int64_t RunStore::add_tie_break(const TieBreak& tb) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    auto st = conn_->prepare(
        "INSERT INTO tie_breaks (sweep_id, created_at, candidates_json, rounds, winner_key, "
        "decided, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind(tb.sweep_id, store::unix_now(), tb.candidates_json, tb.rounds, tb.winner_key,
            tb.decided, tb.summary)
        .run();
    return conn_->last_insert_rowid();
  });
}

std::vector<TieBreak> RunStore::tie_breaks(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(
      "SELECT id, sweep_id, created_at, candidates_json, rounds, winner_key, decided, summary "
      "FROM tie_breaks WHERE sweep_id = ?1 ORDER BY id");
  st.bind(sweep_id);
  std::vector<TieBreak> out;
  while (st.step())
    out.push_back({st.i64(0), st.i64(1), st.f64(2), st.text(3), int(st.i64(4)), st.text(5),
                   st.i64(6) != 0, st.text(7)});
  return out;
}

std::vector<PrunedCandidate> RunStore::pruned(int64_t sweep_id) {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare(
      "SELECT key, config_json, predicted_mem_bytes, budget_bytes, reason FROM pruned "
      "WHERE sweep_id = ?1 ORDER BY key");
  st.bind(sweep_id);
  std::vector<PrunedCandidate> out;
  while (st.step()) out.push_back({st.text(0), st.text(1), st.u64(2), st.u64(3), st.text(4)});
  return out;
}

std::optional<ProbeResult> RunStore::latest_probe(std::optional<std::string_view> host) {
  std::lock_guard lock(mutex_);
  return conn_->read_transaction([&]() -> std::optional<ProbeResult> {
    auto st = conn_->prepare(
        "SELECT id, created_at, host, device, world_size, gemm_flops_per_s, gemm_ranks, host_cpus "
        "FROM probes "
        "WHERE (?1 IS NULL OR host = ?1) ORDER BY created_at DESC, id DESC LIMIT 1");
    st.bind(host);
    if (!st.step()) return std::nullopt;
    ProbeResult p;
    p.id = st.i64(0);
    p.created_at = st.f64(1);
    p.host = st.text(2);
    p.device = st.text(3);
    p.world_size = int(st.i64(4));
    p.gemm_flops_per_s = st.f64(5);
    p.gemm_ranks = int(st.i64(6));
    p.host_cpus = int(st.i64(7));
    auto bw = conn_->prepare(
        "SELECT op, bytes, algbw_gbps, busbw_gbps, link, ranks FROM probe_bandwidth "
        "WHERE probe_id = ?1 "
        "ORDER BY op, link DESC, bytes");
    bw.bind(p.id);
    while (bw.step())
      p.bandwidth.push_back(
          {bw.text(0), bw.u64(1), bw.f64(2), bw.f64(3), bw.text(4), int(bw.i64(5))});
    return p;
  });
}

}  // namespace hybrid::profiler
