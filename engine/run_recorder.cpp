#include "engine/run_recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "base/host.h"
#include "engine/checkpoint/checkpoint_owner.h"
#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/rank_rows_forwarding.h"
#include "profiler/chrome_trace.h"
#include "profiler/gpu_timeline.h"
#include "profiler/report_flops.h"
#include "profiler/store/run_store.h"

namespace hybrid {

using namespace engine;
using profiler::Category;

namespace {

// Whether anything asks for per-module profiles of some steps.
bool wants_profile(const Config& cfg, const TrainOptions& opts) {
  return cfg.flops_profiler.enabled || cfg.profiler.trace || !cfg.profiler.chrome_trace.empty() ||
         !opts.db.empty();
}

// Rank 0: which ranks' rows reach the store through it, and when.
void say_forwarded(const std::vector<int>& away) {
  if (away.empty()) return;
  std::printf(
      "run store: ranks %s run on other machines than rank 0; rank 0 writes their rows "
      "at the end of the run (docs/cluster.md)\n",
      fmt::format("{}", fmt::join(away, ",")).c_str());
}

}  // namespace

RunRecorder::RunRecorder(const Config& cfg, const TrainOptions& opts, int rank)
    : cfg_(cfg), opts_(opts), rank_(rank) {
  if (opts.db.empty() || rank != 0) return;
  store_ = std::make_unique<profiler::RunStore>(opts.db);
  profiler::RunInfo info;
  info.name = opts.run_name;
  // The config as written, with the model it ran: a Hugging Face init_from may
  // leave hybrid.model out (its config.json gives it).
  nlohmann::json raw = cfg.raw;
  if (!raw.contains("hybrid") || !raw["hybrid"].contains("model"))
    raw["hybrid"]["model"] = engine::model_identity(cfg);
  info.config_json = raw.dump();
  info.host = base::host_name();
  info.world_size =
      cfg.train_batch_size / (cfg.train_micro_batch_size_per_gpu * cfg.gradient_accumulation_steps);
  info.dtype = std::string(kernels::dtype_name(cfg.param_dtype()));
  info.zero_stage = cfg.zero.stage;
  info.micro_batch = cfg.train_micro_batch_size_per_gpu;
  info.grad_accum = cfg.gradient_accumulation_steps;
  info.seq_len = cfg.seq_len();
  info.hybrid_version = "0.1.0";
  info.git_revision = HYBRID_GIT_REVISION;
  run_id_ = store_->create_run(info);
}

RunRecorder::~RunRecorder() = default;

void RunRecorder::attach(Engine& engine, int64_t steps) {
  engine_ = &engine;
  run_id_ = engine.broadcast_from_rank0(run_id_);
  // SQLite's WAL index is shared memory: only ranks on rank 0's machine open the
  // store; the others keep their rows for rank 0 to write (forward_rank_rows).
  const auto& placement = engine.host_communicator().placement();
  const bool recording = !opts_.db.empty();
  away_ = recording && rank_ != 0 && !placement.same_machine(rank_, 0);
  if (recording && rank_ != 0 && !away_) store_ = std::make_unique<profiler::RunStore>(opts_.db);
  if (recording && rank_ == 0) say_forwarded(ranks_away_from_rank0(placement));

  // The profiled window (steps numbered from 1): DeepSpeed's profile_step, or
  // the third step (past warm-up) for a run that is only being recorded.
  const int64_t first = engine.global_step() + 1;
  if (wants_profile(cfg_, opts_)) {
    const int64_t at = cfg_.flops_profiler.enabled ? cfg_.flops_profiler.profile_step
                                                   : std::min<int64_t>(3, steps);
    profile_begin_ = first + std::max<int64_t>(at, 1) - 1;
    const int64_t len = cfg_.flops_profiler.enabled && !cfg_.profiler.trace
                            ? 1
                            : std::max(1, cfg_.profiler.trace_steps);
    profile_end_ = std::min(first + steps, profile_begin_ + len);
  }

  for (auto* m : engine.module_tree().modules()) {
    profiler::ModuleInfo info;
    info.id = m->id();
    info.parent_id = m->parent();
    info.name = m->name().empty() ? "model" : m->name();
    info.type = m->type();
    info.depth = m->depth();
    info.n_params = uint64_t(m->own_param_count());
    info.activation_bytes = m->activation_bytes();
    modules_.push_back(info);
  }
  if (!store_ && !away_) return;
  profiler::RankInfo me;
  me.rank = rank_;
  me.epoch_unix_ns = profiler::unix_ns_of(engine.tracer().epoch());
  me.local_rank = placement.local_rank(rank_);
  me.local_size = placement.local_size(rank_);
  me.threads = omp_get_max_threads();
  me.host_memory_bytes = base::physical_memory();
  me.pipeline_stage = engine.pipeline_stage();
  if (away_) {  // what register_rank would fill in, from this process
    me.host = base::host_name();
    me.pid = int64_t(::getpid());
    forwarded_.rank = std::move(me);
    return;
  }
  store_->register_rank(run_id_, std::move(me));
  if (rank_ == 0) {
    auto info = store_->get_run(run_id_);
    info.device = engine.backend().name();
    info.backend = engine.backend().kind() == kernels::BackendKind::cuda ? "cuda" : "cpu";
    info.world_size = engine.world_size();
    info.n_params = uint64_t(engine.param_count());
    store_->update_run(info);
    store_->add_modules(run_id_, modules_);
  }
}

bool RunRecorder::profiled(int64_t step) const {
  return step >= profile_begin_ && step < profile_end_;
}

void RunRecorder::on_step(int64_t step, double loss, double step_ms, double flops_per_step) {
  const auto& st = engine_->last_step();
  const auto totals = engine_->comm_tracer().step_totals(int32_t(step));
  const double exposed_ms = double(totals.exposed_ns) / 1e6;
  step_ranks_.push_back({step, rank_, step_ms - exposed_ms, double(totals.comm_ns) / 1e6,
                         exposed_ms, double(totals.bubble_ns) / 1e6});
  const auto& times = engine_->last_step_times();  // wall_clock_breakdown
  for (int t = 0; t < engine::kStepTimerCount; ++t)
    if (times.measured[size_t(t)])
      step_timers_.push_back(
          {step, rank_, std::string(step_timer_name(StepTimer(t))), times.ms[size_t(t)]});
  if (rank_ == 0) {
    profiler::StepRow r;
    r.step = step;
    r.loss = loss;
    r.lr = st.lr;
    r.loss_scale = st.loss_scale;
    r.skipped = st.skipped;
    r.grad_norm = st.skipped ? std::numeric_limits<double>::quiet_NaN() : st.grad_norm;
    r.step_ms = step_ms;
    const double tokens = double(cfg_.train_batch_size) * cfg_.seq_len();
    r.tokens_per_s = tokens / (step_ms / 1e3);
    r.flops_per_s = flops_per_step / (step_ms / 1e3);
    steps_.push_back(r);
    if (profiled(step)) profiled_rows_.push_back(r);
  }
  // Flushed in batches, so a viewer watching the file sees the run progress.
  if (store_ && step_ranks_.size() >= 10) flush_steps();
}

void RunRecorder::flush_steps() {
  if (!store_) return;
  if (!steps_.empty()) store_->add_steps(run_id_, steps_);
  if (!step_ranks_.empty()) store_->add_step_ranks(run_id_, step_ranks_);
  if (!step_timers_.empty()) store_->add_step_timers(run_id_, step_timers_);
  steps_.clear();
  step_ranks_.clear();
  step_timers_.clear();
}

std::vector<profiler::LayerStat> RunRecorder::layer_stats(
    const std::vector<profiler::Event>& events) const {
  // Times are inclusive as measured; FLOPs are recorded by the op-owning
  // module and added up the tree so that every row is inclusive too.
  // Recomputation (activation checkpointing) has its own columns, inclusive
  // too: an outermost recompute scope (ctx.recompute(block), its parent not
  // recomputing) runs inside its ancestors' backward scopes, so for them it
  // moves from backward to recompute, and fwd + bwd + recompute is every row's time.
  std::map<std::pair<int64_t, int32_t>, profiler::LayerStat> rows;
  const auto& mods = engine_->module_tree().modules();
  std::set<std::pair<int64_t, int32_t>> recomputing;  // (step, module) with a recompute scope
  for (const auto& e : events)
    if (e.module_id >= 0 && e.category == Category::recompute)
      recomputing.insert({e.step, e.module_id});
  auto row = [&](int64_t step, int32_t m) -> profiler::LayerStat& {
    auto& r = rows[{step, m}];
    r.rank = rank_;
    r.module_id = m;
    r.step = step;
    return r;
  };
  for (const auto& e : events) {
    if (e.module_id < 0 || (e.category != Category::forward && e.category != Category::backward &&
                            e.category != Category::recompute))
      continue;
    const bool fwd = e.category == Category::forward;
    const bool macs = mods[size_t(e.module_id)]->type() == "Linear" ||
                      mods[size_t(e.module_id)]->type() == "AttentionCore";
    if (e.category == Category::recompute) {
      row(e.step, e.module_id).recompute_ns += e.dur_ns;
      const int32_t parent = mods[size_t(e.module_id)]->parent();
      const bool outermost = parent < 0 || !recomputing.count({e.step, parent});
      for (int32_t m = e.module_id; m >= 0; m = mods[size_t(m)]->parent()) {
        auto& r = row(e.step, m);
        r.recompute_flops += e.flops;
        if (m != e.module_id && outermost) r.recompute_ns += e.dur_ns, r.bwd_ns -= e.dur_ns;
      }
      continue;
    }
    for (int32_t m = e.module_id; m >= 0; m = mods[size_t(m)]->parent()) {
      auto& r = row(e.step, m);
      if (m == e.module_id) {
        (fwd ? r.fwd_ns : r.bwd_ns) += e.dur_ns;
        if (fwd) ++r.calls;
      }
      (fwd ? r.fwd_flops : r.bwd_flops) += e.flops;
      if (macs) (fwd ? r.fwd_macs : r.bwd_macs) += e.flops / 2;
    }
  }
  std::vector<profiler::LayerStat> out;
  for (auto& [key, r] : rows) out.push_back(r);
  return out;
}

void RunRecorder::print_flops_report(const std::vector<profiler::LayerStat>& mine) {
  // Every rank's module times reach rank 0 through one all-gather; FLOPs are
  // the same formulas everywhere.
  const int W = engine_->world_size();
  const size_t M = modules_.size();
  std::vector<float> local(2 * M, 0.0f);
  int64_t step = profile_begin_;
  for (const auto& r : mine)
    if (r.step == step) {
      local[2 * size_t(r.module_id)] = float(r.fwd_ns);
      local[2 * size_t(r.module_id) + 1] = float(r.bwd_ns);
    }
  const auto all = engine_->all_gather_floats(local);
  if (rank_ != 0) return;
  profiler::RunProfile p;
  p.run.id = run_id_;
  p.run.world_size = W;
  p.steps = profiled_rows_;
  p.run.micro_batch = cfg_.train_micro_batch_size_per_gpu;
  p.run.grad_accum = cfg_.gradient_accumulation_steps;
  p.run.seq_len = cfg_.seq_len();
  p.run.n_params = uint64_t(engine_->param_count());
  p.run.dtype = std::string(kernels::dtype_name(cfg_.param_dtype()));
  p.run.zero_stage = cfg_.zero.stage;
  p.modules = modules_;
  for (int r = 0; r < W; ++r)
    for (auto row : mine) {
      if (row.step != step) continue;
      row.rank = r;
      row.fwd_ns = int64_t(all[size_t(r) * 2 * M + 2 * size_t(row.module_id)]);
      row.bwd_ns = int64_t(all[size_t(r) * 2 * M + 2 * size_t(row.module_id) + 1]);
      p.layers.push_back(row);
    }
  profiler::FlopsReportOptions o;
  o.module_depth = cfg_.flops_profiler.module_depth;
  o.top_modules = cfg_.flops_profiler.top_modules;
  o.detailed = cfg_.flops_profiler.detailed;
  o.step = step;
  const std::string text = profiler::flops_report(p, o);
  if (cfg_.flops_profiler.output_file.empty()) {
    std::printf("%s\n", text.c_str());
  } else {
    std::ofstream(cfg_.flops_profiler.output_file) << text;
  }
}

std::vector<profiler::MemoryRow> RunRecorder::memory_rows(const TrainSummary& summary,
                                                          const MemoryPrediction& predicted) const {
  // Device memory by category; host memory and NVMe swap files, when used, as
  // "host.<category>" and "nvme.<category>" (docs/schema.md).
  std::vector<profiler::MemoryRow> mem;
  uint64_t nvme_total = 0;
  for (auto b : summary.nvme_bytes) nvme_total += b;
  for (int c = 0; c < kMemCategoryCount; ++c) {
    const std::string name(mem_category_name(MemCategory(c)));
    mem.push_back({rank_, name, summary.memory.current[size_t(c)], summary.memory.peak[size_t(c)],
                   predicted.bytes[size_t(c)]});
    if (summary.host_memory.total_peak > 0)
      mem.push_back({rank_, "host." + name, summary.host_memory.current[size_t(c)],
                     summary.host_memory.peak[size_t(c)], predicted.host[size_t(c)]});
    if (nvme_total > 0)
      mem.push_back({rank_, "nvme." + name, summary.nvme_bytes[size_t(c)],
                     summary.nvme_bytes[size_t(c)], predicted.nvme[size_t(c)]});
  }
  return mem;
}

std::vector<profiler::CommStatRow> RunRecorder::comm_rows() const {
  std::vector<profiler::CommStatRow> comm;
  for (const auto& c : engine_->comm_tracer().stats()) {
    profiler::CommStatRow row;
    row.rank = rank_;
    row.op = std::string(profiler::collective_name(c.kind));
    row.bytes = c.msg_bytes;
    row.count = int64_t(c.count);
    row.total_ns = c.total_ns;
    row.min_ns = c.min_ns;
    row.max_ns = c.max_ns;
    row.algbw_gbps = c.mean_algbw_gbps();
    row.busbw_gbps = c.mean_busbw_gbps();
    row.link = std::string(profiler::link_name(c.link));
    row.group = c.group;
    comm.push_back(row);
  }
  // The offload path's file I/O goes with the collectives, under its own op names.
  for (const auto& io : engine_->comm_tracer().io_stats()) {
    profiler::CommStatRow row;
    row.rank = rank_;
    row.op = std::string(profiler::io_name(io.kind));
    row.bytes = io.msg_bytes;
    row.count = int64_t(io.count);
    row.total_ns = io.total_ns;
    row.min_ns = io.min_ns;
    row.max_ns = io.max_ns;
    row.algbw_gbps = io.mean_gbps();
    row.busbw_gbps = io.mean_gbps();  // one rank, one file: no bus factor
    comm.push_back(row);
  }
  return comm;
}

void RunRecorder::finish(const TrainSummary& summary) {
  Engine& e = *engine_;
  e.flush_gpu_activity();  // CUPTI's kernel/memcpy records of the profiled steps join the CPU
                           // events
  events_ = e.tracer().drain();
  auto stats = layer_stats(events_);
  std::vector<profiler::GpuRankTimeline> gpu;
  if (e.backend().kind() == kernels::BackendKind::cuda) {
    // On a GPU the scopes measured launches: module times, step accounting and the
    // timeline come from the device records of the profiled steps instead.
    const auto& names = e.tracer().names();
    profiler::apply_device_times(stats, profiler::device_time_by_module(events_, modules_));
    gpu = profiler::analyze_gpu_timeline(events_, names);
    for (auto& row : profiler::gpu_step_accounting(events_, names)) {
      row.rank = rank_;
      step_ranks_.push_back(row);  // replaces the host row of the same step when stored
    }
  } else {
    for (auto& row : stats)
      row.host_fwd_ns = row.fwd_ns, row.host_bwd_ns = row.bwd_ns,
      row.host_recompute_ns = row.recompute_ns;
  }
  if (cfg_.flops_profiler.enabled && profile_end_ > profile_begin_) print_flops_report(stats);
  if (cfg_.comms_logger.enabled && rank_ == 0)
    std::printf("%s\n", e.comm_tracer().summary().c_str());

  if (store_) {
    flush_steps();
    store_->add_layer_stats(run_id_, stats);
    if (!gpu.empty()) store_->add_gpu_timeline(run_id_, gpu);
    store_->add_events(run_id_, events_, e.tracer().names());
    store_->add_comm_stats(run_id_, comm_rows());
    store_->add_memory(
        run_id_, memory_rows(summary, predict_stage_memory(cfg_, e.world_size(), e.pipeline_stage(),
                                                           e.backend())));
  } else if (away_) {
    auto& f = forwarded_;
    f.step_ranks = std::move(step_ranks_);
    f.step_timers = std::move(step_timers_);
    f.layers = std::move(stats);
    f.gpu = std::move(gpu);
    f.events = {std::move(events_), e.tracer().names()};
    f.comm = comm_rows();
    f.memory = memory_rows(
        summary, predict_stage_memory(cfg_, e.world_size(), e.pipeline_stage(), e.backend()));
  }
  // After every collective the rows count, so forwarding adds none to them.
  if (!opts_.db.empty())
    forward_rank_rows(e.host_communicator(), store_.get(), run_id_, forwarded_);
  e.barrier();  // every rank's rows are in before the run is declared finished
  if (store_ && rank_ == 0) {
    store_->finish_run(run_id_, summary.status, summary.error, summary.to_json().dump());
    if (!cfg_.profiler.chrome_trace.empty()) {
      const auto set = store_->events(run_id_);
      const auto run = store_->get_run(run_id_);
      profiler::write_chrome_trace(
          cfg_.profiler.chrome_trace,
          profiler::chrome_trace(set, modules_, store_->ranks(run_id_), &run));
    }
  } else if (!cfg_.profiler.chrome_trace.empty() && rank_ == 0) {
    profiler::EventSet set{events_, e.tracer().names()};
    profiler::write_chrome_trace(cfg_.profiler.chrome_trace,
                                 profiler::chrome_trace(set, modules_, {}, nullptr));
  }
}

void RunRecorder::fail(const TrainSummary& summary) {
  if (!store_ || rank_ != 0 || !run_id_) return;
  try {
    flush_steps();
    store_->finish_run(run_id_, summary.status, summary.error, summary.to_json().dump());
  } catch (const std::exception& err) {
    std::fprintf(stderr, "hybrid-train: could not record the failure in %s: %s\n", opts_.db.c_str(),
                 err.what());
  }
}

}  // namespace hybrid
