#include "engine/run_recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "base/host.h"
#include "engine/engine.h"
#include "engine/rank_rows_forwarding.h"
#include "profiler/chrome_trace.h"
#include "profiler/gpu_timeline.h"
#include "profiler/report_flops.h"
#include "profiler/store/run_store.h"
#include "profiler/tables/layer_rows.h"

namespace hybrid {

using namespace engine;

namespace {

// Rank 0: which ranks' rows reach the store through it, and when.
void say_forwarded(const std::vector<int>& away) {
  if (away.empty()) return;
  std::printf(
      "run store: ranks %s run on other machines than rank 0; rank 0 writes their rows "
      "at the end of the run (docs/cluster.md)\n",
      fmt::format("{}", fmt::join(away, ",")).c_str());
}

// The run as rank 0 creates it, before the engine exists.
profiler::RunInfo run_info(const Config& cfg, const std::string& run_name) {
  profiler::RunInfo info;
  info.name = run_name;
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
  return info;
}

std::vector<profiler::ModuleInfo> module_infos(const ModuleTree& tree) {
  std::vector<profiler::ModuleInfo> out;
  for (auto* m : tree.modules()) {
    profiler::ModuleInfo info;
    info.id = m->id();
    info.parent_id = m->parent();
    info.name = m->name().empty() ? "model" : m->name();
    info.type = m->type();
    info.depth = m->depth();
    info.n_params = uint64_t(m->own_param_count());
    info.activation_bytes = m->activation_bytes();
    out.push_back(info);
  }
  return out;
}

// The modules whose FLOPs are multiply-accumulates (the FLOPs profiler's MACs).
std::vector<int32_t> mac_modules(const ModuleTree& tree) {
  std::vector<int32_t> out;
  for (auto* m : tree.modules())
    if (m->multiply_accumulates()) out.push_back(m->id());
  return out;
}

}  // namespace

RunRecorder::RunRecorder(const Config& cfg, std::string db, const std::string& run_name, int rank)
    : cfg_(cfg), db_(std::move(db)), rank_(rank) {
  if (db_.empty() || rank != 0) return;
  store_ = std::make_unique<profiler::RunStore>(db_);
  run_id_ = store_->create_run(run_info(cfg, run_name));
}

RunRecorder::~RunRecorder() = default;

void RunRecorder::attach(Engine& engine, const ProfileWindow& window) {
  engine_ = &engine;
  window_ = window;
  run_id_ = engine.broadcast_from_rank0(run_id_);
  modules_ = module_infos(engine.module_tree());
  open_store();
  if (store_ || away_) register_rank();
}

// SQLite's WAL index is shared memory: only ranks on rank 0's machine open the
// store; the others keep their rows for rank 0 to write (forward_rank_rows).
void RunRecorder::open_store() {
  if (db_.empty()) return;
  const auto& placement = engine_->host_communicator().placement();
  away_ = rank_ != 0 && !placement.same_machine(rank_, 0);
  if (rank_ != 0 && !away_) store_ = std::make_unique<profiler::RunStore>(db_);
  if (rank_ == 0) say_forwarded(ranks_away_from_rank0(placement));
}

void RunRecorder::register_rank() {
  Engine& engine = *engine_;
  const auto& placement = engine.host_communicator().placement();
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
    rows_.rank = std::move(me);
    return;
  }
  store_->register_rank(run_id_, std::move(me));
  if (rank_ != 0) return;
  auto info = store_->get_run(run_id_);
  info.device = engine.backend().name();
  info.backend = engine.backend().kind() == kernels::BackendKind::cuda ? "cuda" : "cpu";
  info.world_size = engine.world_size();
  info.n_params = uint64_t(engine.param_count());
  store_->update_run(info);
  store_->add_modules(run_id_, modules_);
}

void RunRecorder::on_step(const StepRecord& s) {
  rows_.step_ranks.push_back(
      {s.step, rank_, s.compute_ms(), s.comm_ms, s.exposed_comm_ms, s.bubble_ms});
  for (int t = 0; t < engine::kStepTimerCount; ++t)  // wall_clock_breakdown
    if (s.timers.measured[size_t(t)])
      rows_.step_timers.push_back(
          {s.step, rank_, std::string(step_timer_name(StepTimer(t))), s.timers.ms[size_t(t)]});
  if (rank_ == 0) {
    profiler::StepRow r;
    r.step = s.step;
    r.loss = s.loss;
    r.lr = s.lr;
    r.loss_scale = s.loss_scale;
    r.skipped = s.skipped;
    r.grad_norm = s.skipped ? std::numeric_limits<double>::quiet_NaN() : s.grad_norm;
    r.step_ms = s.ms;
    r.tokens_per_s = s.tokens_per_s;
    r.flops_per_s = s.flops_per_s;
    steps_.push_back(r);
    if (s.traced) profiled_rows_.push_back(r);
  }
  // Flushed in batches, so a viewer watching the file sees the run progress.
  if (store_ && rows_.step_ranks.size() >= 10) flush_steps();
}

void RunRecorder::on_rollout(const profiler::GenerationRow& row) {
  if (store_ && rank_ == 0) store_->add_generation(run_id_, row);
}

void RunRecorder::flush_steps() {
  if (!store_) return;
  if (!steps_.empty()) store_->add_steps(run_id_, steps_);
  if (!rows_.step_ranks.empty()) store_->add_step_ranks(run_id_, rows_.step_ranks);
  if (!rows_.step_timers.empty()) store_->add_step_timers(run_id_, rows_.step_timers);
  steps_.clear();
  rows_.step_ranks.clear();
  rows_.step_timers.clear();
}

// The profiled steps' layer rows; on a GPU also the device timeline and the
// step accounting of the device records (rows_.gpu, rows_.step_ranks).
std::vector<profiler::LayerStat> RunRecorder::profile_rows(
    const std::vector<profiler::Event>& events) {
  Engine& e = *engine_;
  const bool gpu = e.backend().kind() == kernels::BackendKind::cuda;
  const auto macs = mac_modules(e.module_tree());
  // On a GPU the scopes measured launches: module times, step accounting and the
  // timeline come from the device records of the profiled steps instead.
  auto stats = profiler::layer_rows(events, modules_, {.mac_modules = macs, .device_times = gpu});
  if (!gpu) return stats;
  const auto& names = e.tracer().names();
  rows_.gpu = profiler::analyze_gpu_timeline(events, names);
  for (auto& row : profiler::gpu_step_accounting(events, names)) {
    row.rank = rank_;
    rows_.step_ranks.push_back(row);  // replaces the host row of the same step when stored
  }
  return stats;
}

void RunRecorder::print_reports(const std::vector<profiler::LayerStat>& mine) {
  if (cfg_.flops_profiler.enabled && !window_.empty()) print_flops_report(mine);
  if (cfg_.comms_logger.enabled && rank_ == 0)
    std::printf("%s\n", engine_->comm_tracer().summary().c_str());
}

void RunRecorder::print_flops_report(const std::vector<profiler::LayerStat>& mine) {
  // Every rank's module times reach rank 0 through one all-gather; FLOPs are
  // the same formulas everywhere.
  const int W = engine_->world_size();
  const size_t M = modules_.size();
  std::vector<float> local(2 * M, 0.0f);
  const int64_t step = window_.first();
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

// Device memory by category; host memory and NVMe swap files, when used, as
// "host.<category>" and "nvme.<category>" (docs/schema.md).
std::vector<profiler::MemoryRow> RunRecorder::memory_rows(const MemoryReport& m) const {
  std::vector<profiler::MemoryRow> mem;
  const bool nvme = m.nvme_total() > 0;
  for (int c = 0; c < kMemCategoryCount; ++c) {
    const std::string name(mem_category_name(MemCategory(c)));
    const size_t i = size_t(c);
    const uint64_t any = m.device.peak[i] | m.predicted_device[i] | m.host.peak[i] |
                         m.predicted_host[i] | m.nvme[i] | m.predicted_nvme[i];
    if (!listed_category(MemCategory(c), any)) continue;
    mem.push_back({rank_, name, m.device.current[i], m.device.peak[i], m.predicted_device[i]});
    if (m.host.total_peak > 0)
      mem.push_back(
          {rank_, "host." + name, m.host.current[i], m.host.peak[i], m.predicted_host[i]});
    if (nvme) mem.push_back({rank_, "nvme." + name, m.nvme[i], m.nvme[i], m.predicted_nvme[i]});
  }
  return mem;
}

std::vector<profiler::CommStatRow> RunRecorder::comm_rows() const {
  // The sizes and times a collective's and a file's statistics share.
  auto row = [this](std::string_view op, const auto& stat, double algbw, double busbw) {
    profiler::CommStatRow r;
    r.rank = rank_;
    r.op = std::string(op);
    r.bytes = stat.msg_bytes;
    r.count = int64_t(stat.count);
    r.total_ns = stat.total_ns;
    r.min_ns = stat.min_ns;
    r.max_ns = stat.max_ns;
    r.algbw_gbps = algbw;
    r.busbw_gbps = busbw;
    return r;
  };
  std::vector<profiler::CommStatRow> comm;
  for (const auto& c : engine_->comm_tracer().stats()) {
    comm.push_back(
        row(profiler::collective_name(c.kind), c, c.mean_algbw_gbps(), c.mean_busbw_gbps()));
    comm.back().link = std::string(profiler::link_name(c.link));
    comm.back().group = c.group;
  }
  // The offload path's file I/O goes with the collectives, under its own op names;
  // one rank, one file: no bus factor.
  for (const auto& io : engine_->comm_tracer().io_stats())
    comm.push_back(row(profiler::io_name(io.kind), io, io.mean_gbps(), io.mean_gbps()));
  return comm;
}

void RunRecorder::finish(const TrainSummary& summary) {
  Engine& e = *engine_;
  e.flush_gpu_activity();  // CUPTI's records of the profiled steps join the CPU events
  auto events = e.tracer().drain();
  auto stats = profile_rows(events);
  print_reports(stats);
  if (store_) {
    flush_steps();
    store_->add_layer_stats(run_id_, stats);
    if (!rows_.gpu.empty()) store_->add_gpu_timeline(run_id_, rows_.gpu);
    store_->add_events(run_id_, events, e.tracer().names());
    store_->add_comm_stats(run_id_, comm_rows());
    store_->add_memory(run_id_, memory_rows(summary.memory));
  } else if (away_) {
    rows_.layers = std::move(stats);
    rows_.comm = comm_rows();
    rows_.memory = memory_rows(summary.memory);
    rows_.events = {std::move(events), e.tracer().names()};
  }
  // After every collective the rows count, so forwarding adds none to them.
  if (!db_.empty()) forward_rank_rows(e.host_communicator(), store_.get(), run_id_, rows_);
  e.barrier();  // every rank's rows are in before the run is declared finished
  if (store_ && rank_ == 0)
    store_->finish_run(run_id_, summary.status, summary.error, summary.to_json().dump());
  if (rank_ == 0 && !cfg_.profiler.chrome_trace.empty()) write_chrome_trace(events);
}

// From the store when there is one (every rank's events), else rank 0's own.
void RunRecorder::write_chrome_trace(const std::vector<profiler::Event>& events) {
  if (store_) {
    const auto set = store_->events(run_id_);
    const auto run = store_->get_run(run_id_);
    profiler::write_chrome_trace(
        cfg_.profiler.chrome_trace,
        profiler::chrome_trace(set, modules_, store_->ranks(run_id_), &run));
    return;
  }
  profiler::EventSet set{events, engine_->tracer().names()};
  profiler::write_chrome_trace(cfg_.profiler.chrome_trace,
                               profiler::chrome_trace(set, modules_, {}, nullptr));
}

void RunRecorder::fail(const TrainSummary& summary) {
  if (!store_ || rank_ != 0 || !run_id_) return;
  try {
    flush_steps();
    store_->finish_run(run_id_, summary.status, summary.error, summary.to_json().dump());
  } catch (const std::exception& err) {
    std::fprintf(stderr, "hybrid-train: could not record the failure in %s: %s\n", db_.c_str(),
                 err.what());
  }
}

}  // namespace hybrid
