#include "engine/trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "base/atomic_file.h"
#include "base/launcher_env.h"
#include "base/statistics.h"
#include "base/units.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/save_policy.h"
#include "engine/data/data_loader.h"
#include "engine/data/data_sources.h"
#include "engine/divergence.h"
#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/run_preflight.h"
#include "engine/run_recorder.h"
#include "profiler/flops.h"

namespace hybrid {

using namespace engine;
using profiler::RunStatus;

double model_flops_per_step(const Config& cfg, int64_t matmul_params, int world_size) {
  const double tokens = double(cfg.train_micro_batch_size_per_gpu) *
                        cfg.gradient_accumulation_steps * world_size * cfg.seq_len();
  return profiler::flops::decoder_step_closed_form(double(matmul_params), cfg.model.n_layer,
                                                   cfg.model.n_embd, cfg.seq_len(), tokens,
                                                   /*causal=*/true);
}

namespace {

// Informational lines on rank 0 (none with --quiet).
class Say {
 public:
  explicit Say(bool on) : on_(on) {}
  void operator()(const std::string& line) const {
    if (on_) std::printf("%s\n", line.c_str()), std::fflush(stdout);
  }

 private:
  bool on_;
};

// The model, the backend and the batch, in one line; then the ignored keys.
void announce(const Config& cfg, Engine& engine, const Say& say) {
  say(fmt::format(
      "hybrid: {} {} parameters (L={} C={} H={} V={}), {} | {} rank(s), ZeRO stage {}, {} | "
      "batch {} = {} micro × {} accumulation × {} data-parallel ranks, seq {}{}",
      cfg.model.type, base::format_count(double(engine.param_count())), cfg.model.n_layer,
      cfg.model.n_embd, cfg.model.n_head, cfg.model.vocab_size, engine.backend().name(),
      engine.world_size(), cfg.zero.stage, kernels::dtype_name(cfg.param_dtype()),
      cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps,
      engine.data_parallel_size(), cfg.seq_len(),
      cfg.seq_len() != cfg.model.seq_len ? fmt::format(" (block size {})", cfg.model.seq_len)
                                         : std::string()));
  for (const auto& key : cfg.ignored_keys) say("config: ignoring unsupported key " + key);
  for (const auto& warning : cfg.warnings) say("config: warning: " + warning);
}

// Starting weights: an llm.c checkpoint or a Hugging Face directory
// (hybrid.init_from), then a checkpoint to resume.
void load_weights(const Config& cfg, const TrainOptions& opts, Engine& engine, const Say& say) {
  if (!cfg.init_from.empty()) {
    engine.set_parameters(engine.model().read_weights(cfg.init_from, engine.module_tree()));
    say("initialised from " + cfg.init_from);
  }
  if (!opts.load_dir.empty()) engine.load_checkpoint(opts.load_dir, opts.load_tag);
}

DataLoader open_loader(const Config& cfg, const Engine& engine, TrainSummary& out) {
  auto data = open_data_sources(cfg);
  if (data.synthetic) {
    out.unigram_entropy = data.unigram_entropy;
    out.entropy_rate = data.entropy_rate;
  }
  return DataLoader(
      std::move(data.train),
      BatchShape{cfg.train_micro_batch_size_per_gpu, cfg.seq_len(), cfg.gradient_accumulation_steps,
                 engine.data_parallel_size(), engine.data_parallel_rank()});
}

// The loop's state: what one step needs, and what the steps have measured.
struct Loop {
  Loop(const Config& c, const TrainOptions& o, Engine& e, RunRecorder& r, DataLoader d,
       const Say& s)
      : cfg(c),
        opts(o),
        engine(e),
        recorder(r),
        loader(std::move(d)),
        say(s),
        policy(c.checkpoint, o.save_dir, o.save_every) {
    micro_tokens = size_t(c.train_micro_batch_size_per_gpu) * size_t(c.seq_len());
    batch_inputs.resize(micro_tokens * size_t(c.gradient_accumulation_steps));
    batch_targets.resize(batch_inputs.size());
    tokens_per_step = double(loader.tokens_per_step());
    first = e.global_step();
    steps = o.steps > 0 ? o.steps : 20;
  }

  const Config& cfg;
  const TrainOptions& opts;
  Engine& engine;
  RunRecorder& recorder;
  DataLoader loader;
  const Say& say;
  SavePolicy policy;
  int64_t first = 0, steps = 0;                      // global step before the loop; steps to run
  double tokens_per_step = 0.0;                      // over all ranks
  size_t micro_tokens = 0;                           // B·T of one micro-batch
  std::vector<int32_t> batch_inputs, batch_targets;  // a step's micro-batches, one after another
  uint32_t step_name = 0, data_name = 0;
  std::vector<double> step_ms;
  std::vector<bool> skipped;             // per step: the update was not applied
  std::vector<double> pipeline_waiting;  // per step: waiting / schedule (pipeline stages)
  double exposed_total_ms = 0.0;
  // The kind of the last checkpoint saved whose keep_last rotation waits for the
  // next step's loss (save_checkpoint).
  std::optional<SavePolicy::Kind> unverified_save;
};

// One optimizer step (gas micro-batches) of global step s+1 through the
// engine's one entry, whatever the parallel layout; returns the loss averaged
// over micro-batches and ranks.
double run_step(Loop& l, int64_t s) {
  auto& tracer = l.engine.tracer();
  const int gas = l.cfg.gradient_accumulation_steps;
  const size_t n = l.micro_tokens;
  std::vector<const int32_t*> in, tg;
  double loss = 0.0;
  {
    profiler::Scope step_scope(&tracer, l.step_name, profiler::Category::step);
    {
      profiler::Scope data_scope(&tracer, l.data_name, profiler::Category::data);
      for (int k = 0; k < gas; ++k) {
        int32_t* i = l.batch_inputs.data() + n * size_t(k);
        int32_t* t = l.batch_targets.data() + n * size_t(k);
        l.loader.fill(s, k, i, t);
        in.push_back(i);
        tg.push_back(t);
      }
    }
    loss = l.engine.train_batch(in, tg);
  }
  // On a GPU the step ends when its last kernel does, not when the host has
  // queued it: wait for the device before reading the clock (the next step's
  // first loss read would wait for it anyway).
  l.engine.backend().synchronize();
  tracer.set_enabled(false);
  return l.engine.mean_over_ranks(loss);
}

// keep_last over the checkpoints of `kind` (rank 0 deletes).
void rotate_checkpoints(const Loop& l, SavePolicy::Kind kind) {
  if (l.policy.keep_last() > 0 && l.engine.rank() == 0)
    for (const auto& tag :
         prune_checkpoints(l.policy.dir(), SavePolicy::kind_name(kind), l.policy.keep_last(),
                           SavePolicy::managed_tags(), l.engine.checkpoint_owner()))
      l.say(fmt::format("deleted checkpoint {}/{} (keep_last {})", l.policy.dir(), tag,
                        l.policy.keep_last()));
}

// The rotation after the last save, once the loss that follows it is known: a
// step saves the weights after its update, and only the next forward shows
// whether that update blew up (a learning rate far too high gives a finite loss,
// then NaN). A non-finite loss keeps every older checkpoint.
void rotate_after(Loop& l, double next_loss) {
  if (!l.unverified_save) return;
  if (std::isfinite(next_loss)) rotate_checkpoints(l, *l.unverified_save);
  l.unverified_save.reset();
}

// A checkpoint of the current step; its rotation waits (rotate_after).
void save_checkpoint(Loop& l, SavePolicy::Kind kind) {
  const int64_t step = l.engine.global_step();
  CheckpointSaveOptions o;
  o.full = kind == SavePolicy::Kind::full;
  if (l.opts.before_publish) o.before_publish = [&l, step] { l.opts.before_publish(step); };
  l.engine.save_checkpoint(l.policy.dir(), SavePolicy::tag(step), o);
  l.unverified_save = kind;
}

// A step whose loss is not finite saves nothing: its weights may be lost, and
// keep_last would rotate good checkpoints out for it. The loss is the mean over
// the ranks, so every rank decides alike (saving is collective).
void save_unless_diverging(Loop& l, SavePolicy::Kind kind, double loss) {
  if (!std::isfinite(loss)) {
    l.say(fmt::format("not saving step {}: its loss is {}; the checkpoints before it are kept",
                      l.engine.global_step(), loss));
    return;
  }
  save_checkpoint(l, kind);
}

// After step s+1: its measurements, the progress line, a periodic checkpoint,
// and the caller's hook.
void finish_step(Loop& l, TrainSummary& out, int64_t s, double loss, double ms) {
  l.step_ms.push_back(ms);
  if (const auto& p = l.engine.last_pipeline_times(); p.schedule_ms > 0)
    l.pipeline_waiting.push_back(p.waiting_ms / p.schedule_ms);
  l.exposed_total_ms += double(l.engine.comm_tracer().step_totals(int32_t(s + 1)).exposed_ns) / 1e6;
  out.losses.push_back(loss);
  l.skipped.push_back(l.engine.last_step().skipped);
  l.recorder.on_step(s + 1, loss, ms, out.flops_per_step);
  const auto& st = l.engine.last_step();
  const int64_t done = s - l.first + 1;
  const int every = l.cfg.steps_per_print;
  if (done == 1 || done == l.steps || (every > 0 && (s + 1) % every == 0)) {
    l.say(fmt::format(
        "step {:>5} | loss {:.4f} | lr {:.3e} | scale {:g}{} | {:.1f} ms | {:.0f} tok/s | {}",
        s + 1, loss, st.lr, st.loss_scale, st.skipped ? " (skipped)" : "", ms,
        l.tokens_per_step / (ms / 1e3), base::format_flop_rate(out.flops_per_step / (ms / 1e3))));
    // DeepSpeed's wall-clock breakdown of this step (rank 0's timers).
    if (l.cfg.wall_clock_breakdown)
      for (const auto& line : l.engine.last_step_times().log_lines()) l.say(line);
  }
  rotate_after(l, loss);
  if (const auto kind = l.policy.at_step(s + 1); kind != SavePolicy::Kind::none)
    save_unless_diverging(l, kind, loss);
  if (l.opts.after_step) l.opts.after_step(s + 1);
}

void run_loop(Loop& l, TrainSummary& out) {
  auto& tracer = l.engine.tracer();
  l.step_name = tracer.intern("step");
  l.data_name = tracer.intern("data");
  for (int64_t s = l.first; s < l.first + l.steps; ++s) {
    tracer.set_enabled(l.recorder.profiled(s + 1));
    tracer.set_step(int32_t(s + 1));
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = run_step(l, s);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    finish_step(l, out, s, loss, ms);
  }
}

// The final checkpoint (unless the last periodic one is it) and the exports
// (llm.c file, Hugging Face directory); none after a last loss that is not
// finite (an export would replace the files with weights that may be lost).
void save_outputs(Loop& l, double last_loss) {
  const TrainOptions& opts = l.opts;
  Engine& engine = l.engine;
  const Say& say = l.say;
  if (const auto kind = l.policy.at_end(engine.global_step());
      l.policy.enabled() && kind != SavePolicy::Kind::none)
    save_unless_diverging(l, kind, last_loss);
  // No step follows the last save: it rotates on the loss that led to it.
  rotate_after(l, last_loss);
  if (opts.export_path.empty() && opts.export_hf_dir.empty()) return;
  if (!std::isfinite(last_loss)) {
    const std::string both = opts.export_path.empty() || opts.export_hf_dir.empty() ? "" : " and ";
    say(fmt::format("not exporting to {}{}{}: the last loss is {}", opts.export_path, both,
                    opts.export_hf_dir, last_loss));
    return;
  }
  const auto flat = engine.gather_parameters();  // collective
  if (engine.rank() != 0) return;
  engine.model().write_weights(engine.module_tree(), flat, {opts.export_path, opts.export_hf_dir});
  if (!opts.export_path.empty()) say("exported fp32 weights to " + opts.export_path);
  if (!opts.export_hf_dir.empty())
    say("exported a Hugging Face directory to " + opts.export_hf_dir);
}

// Rates from the median step time, and the memory model's prediction.
void summarize(const Loop& l, TrainSummary& out) {
  const double ms = out.ms_per_step_median = base::median(l.step_ms);
  out.steps = l.steps;
  out.global_step = l.engine.global_step();
  out.final_loss = out.losses.back();
  out.tokens_per_s = l.tokens_per_step / (ms / 1e3);
  out.samples_per_s = l.tokens_per_step / l.cfg.seq_len() / (ms / 1e3);
  out.achieved_flops_per_s = out.flops_per_step / (ms / 1e3);
  out.skipped_steps = l.engine.skipped_steps();
  out.exposed_comm_ms_per_step = l.exposed_total_ms / double(l.steps);
  if (l.engine.pipeline_stages() > 1) {  // every rank: the gather is collective
    const int p = l.engine.pipeline_stages(), m = l.cfg.gradient_accumulation_steps;
    out.pipeline_stages = p;
    out.pipeline_waiting_fraction = base::median(l.pipeline_waiting);
    out.pipeline_bubble_closed_form = bubble_fraction(p, m);
    const auto all = l.engine.all_gather_floats({float(out.pipeline_waiting_fraction)});
    out.pipeline_waiting_by_rank.assign(all.begin(), all.end());
  }
  const auto predicted = predict_stage_memory(l.cfg, l.engine.world_size(),
                                              l.engine.pipeline_stage(), l.engine.backend());
  out.predicted_peak_bytes = predicted.total();
  out.predicted_memory = predicted.bytes;
  out.predicted_host_memory = predicted.host;
  out.predicted_nvme_bytes = predicted.nvme;
}

// "peak memory per rank: params 1.00 MiB grads ... | total 3.00 MiB"
std::string peak_memory_line(std::string title, const MemoryStats& m) {
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (m.peak[size_t(c)])
      title += fmt::format(" {} {}", mem_category_name(MemCategory(c)),
                           base::format_bytes(m.peak[size_t(c)]));
  return title + fmt::format(" | total {}", base::format_bytes(m.total_peak));
}

void print_summary(const TrainSummary& out, const Say& say) {
  say(fmt::format(
      "done: {} steps, median {:.1f} ms/step, {:.0f} tokens/s, {}, final loss {:.4f}, "
      "{} skipped",
      out.steps, out.ms_per_step_median, out.tokens_per_s,
      base::format_flop_rate(out.achieved_flops_per_s), out.final_loss, out.skipped_steps));
  say(peak_memory_line("peak memory per rank:", out.memory));
  if (out.host_memory.total_peak > 0)
    say(peak_memory_line("peak host memory per rank (offload):", out.host_memory));
  std::string nvme;
  uint64_t nvme_total = 0;
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (out.nvme_bytes[size_t(c)]) {
      nvme += fmt::format(" {} {}", mem_category_name(MemCategory(c)),
                          base::format_bytes(out.nvme_bytes[size_t(c)]));
      nvme_total += out.nvme_bytes[size_t(c)];
    }
  if (nvme_total == 0) return;
  say(fmt::format("NVMe swap files per rank:{} | total {}", nvme, base::format_bytes(nvme_total)));
  const auto& rd = out.io[size_t(profiler::IoKind::nvme_read)];
  const auto& wr = out.io[size_t(profiler::IoKind::nvme_write)];
  say(fmt::format("NVMe I/O of rank 0: read {} in {} requests ({}), wrote {} in {} requests ({})",
                  base::format_bytes(rd.bytes), rd.requests, base::format_gbps(rd.gbps()),
                  base::format_bytes(wr.bytes), wr.requests, base::format_gbps(wr.gbps())));
}

// The whole run; failures propagate to run_training.
void train(const Config& cfg, const TrainOptions& opts, TrainSummary& out, RunRecorder& recorder) {
  EngineOptions engine_opts;
  engine_opts.quiet = opts.quiet;
  auto engine = initialize(cfg, make_model(cfg), std::move(engine_opts));
  out.world_size = engine->world_size();
  out.gemm = engine->gemm_report();
  out.rank = engine->rank();
  const Say say(engine->rank() == 0 && !opts.quiet);
  announce(cfg, *engine, say);
  load_weights(cfg, opts, *engine, say);
  Loop l(cfg, opts, *engine, recorder, open_loader(cfg, *engine, out), say);
  if (const auto w = l.policy.warning(); !w.empty()) say(w);
  out.flops_per_step =
      model_flops_per_step(cfg, engine->model().matmul_params(), engine->data_parallel_size());
  recorder.attach(*engine, l.steps);
  const auto comm_before = engine->comm_counters();
  const auto groups_before = engine->comm_counters_by_group();
  run_loop(l, out);
  out.memory = engine->allocator().stats();  // training's peaks, before any export
  out.host_memory = engine->host_allocator().stats();
  out.nvme_bytes = engine->nvme_bytes();
  for (const auto& st : engine->comm_tracer().io_stats()) {
    auto& t = out.io[size_t(st.kind)];
    t.requests += st.count;
    t.bytes += st.total_bytes;
    t.seconds += double(st.total_ns) * 1e-9;
  }
  const auto comm_after = engine->comm_counters();
  for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
    out.comm_bytes_per_step[size_t(k)] =
        double(comm_after.bytes[k] - comm_before.bytes[k]) / double(l.steps);
  const auto groups_after = engine->comm_counters_by_group();
  for (size_t g = 0; groups_after.size() > 1 && g < groups_after.size(); ++g) {
    std::array<double, profiler::kCollectiveKindCount> bytes{};
    for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
      bytes[size_t(k)] =
          double(groups_after[g].second.bytes[k] - groups_before[g].second.bytes[k]) / l.steps;
    out.comm_bytes_by_group.emplace_back(groups_after[g].first, bytes);
  }
  save_outputs(l, out.losses.back());
  summarize(l, out);
  if (auto why = divergence(out.losses, l.skipped); !why.empty())
    out.status = RunStatus::diverged, out.error_kind = "Diverged", out.error = std::move(why);
  print_summary(out, say);
  recorder.finish(out);
  out.run_id = recorder.run_id();
  if (out.run_id && !opts.db.empty())
    say(fmt::format("recorded as run {} in {}", out.run_id, opts.db));
}

}  // namespace

void write_train_result(const std::string& path, const TrainSummary& s) {
  if (path.empty()) return;
  base::write_file_atomic(path, s.to_json().dump(2) + "\n");
}

TrainSummary run_training(const Config& cfg, const TrainOptions& opts) {
  TrainSummary s;
  std::unique_ptr<RunRecorder> recorder;
  try {
    s.rank = base::launcher_env().rank;  // valid before MPI starts
    recorder = std::make_unique<RunRecorder>(cfg, opts, s.rank);
    check_run_outputs(cfg, opts);
    check_run_inputs(cfg);
    train(cfg, opts, s, *recorder);
  } catch (const OutOfMemoryError& e) {
    s.status = RunStatus::oom, s.error_kind = "OutOfMemoryError", s.error = e.what();
  } catch (const std::bad_alloc& e) {
    // Memory outside the tracked buffers (host vectors, a library's): the process
    // limit (ulimit -v, a cgroup) or the machine ran out before the budget did.
    s.status = RunStatus::oom, s.error_kind = "OutOfMemoryError";
    s.error = fmt::format(
        "out of memory: a host allocation outside the engine's tracked buffers failed ({}); the "
        "process's address space (ulimit -v) or the machine's memory is exhausted",
        e.what());
  } catch (const ConfigError& e) {
    s.status = RunStatus::config_error, s.error_kind = "ConfigError", s.error = e.what();
  } catch (const ArgumentError& e) {
    s.status = RunStatus::config_error, s.error_kind = "ArgumentError", s.error = e.what();
  } catch (const std::exception& e) {
    s.status = RunStatus::failed, s.error_kind = "Error", s.error = e.what();
  }
  if (s.status != RunStatus::ok && recorder) {
    s.run_id = recorder->run_id();
    recorder->fail(s);
  }
  try {
    if (s.rank == 0) write_train_result(opts.result_path, s);
  } catch (const std::exception& e) {  // --result itself is the bad argument: say so, go on
    std::fprintf(stderr, "hybrid-train: the result was not written: %s\n", e.what());
  }
  // mpirun tears the job down once a rank exits non-zero: the others wait a
  // moment, so that rank 0, failing alike (a budget, a config), writes its
  // result first.
  if (s.rank != 0 && s.status != RunStatus::ok)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  return s;
}

}  // namespace hybrid
