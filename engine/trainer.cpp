#include "engine/trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "base/launcher_env.h"
#include "base/units.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/save_policy.h"
#include "engine/data/data_sources.h"
#include "engine/divergence.h"
#include "engine/engine.h"
#include "engine/profile_window.h"
#include "engine/rollout.h"
#include "engine/run_preflight.h"
#include "engine/run_recorder.h"
#include "engine/step_data.h"
#include "engine/step_record.h"
#include "engine/train_reports.h"
#include "engine/validation.h"
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

// What the training steps read; the validation stream goes to `val`.
StepData open_step_data(const Config& cfg, const Engine& engine, TrainSummary& out,
                        TokenDataset& val) {
  auto data = open_data_sources(cfg);
  if (data.synthetic) out.data = {data.unigram_entropy, data.entropy_rate};
  val = std::move(data.val);
  return StepData(cfg, std::move(data.train), engine.data_parallel_size(),
                  engine.data_parallel_rank());
}

// The loop's state: what one step needs, and what the steps have measured.
struct Loop {
  Loop(const Config& c, const TrainOptions& o, Engine& e, RunRecorder& r, StepData d, const Say& s)
      : cfg(c),
        opts(o),
        engine(e),
        recorder(r),
        data(std::move(d)),
        say(s),
        policy(c.checkpoint, o.save_dir, o.save_every) {
    first = e.global_step();
    steps = o.steps > 0 ? o.steps : 20;
    window = ProfileWindow::for_run(c, !o.db.empty(), first, steps);
  }

  const Config& cfg;
  const TrainOptions& opts;
  Engine& engine;
  RunRecorder& recorder;
  StepData data;
  const Say& say;
  SavePolicy policy;
  ProfileWindow window;          // the steps traced
  int64_t first = 0, steps = 0;  // global step before the loop; steps to run
  double tokens = 0.0;           // with a target, over all ranks and the steps run
  double flops_per_step = 0.0;   // model FLOPs of a full step over all ranks
  uint32_t step_name = 0, data_name = 0;
  std::vector<StepRecord> records;  // one per step run
  // The kind of the last checkpoint saved whose keep_last rotation waits for the
  // next step's loss (save_checkpoint).
  std::optional<SavePolicy::Kind> unverified_save;
};

// One optimizer step (gas micro-batches) of global step s+1 through the
// engine's one entry, whatever the parallel layout; returns the loss averaged
// over micro-batches and ranks.
double run_step(Loop& l, int64_t s) {
  auto& tracer = l.engine.tracer();
  double loss = 0.0;
  {
    profiler::Scope step_scope(&tracer, l.step_name, profiler::Category::step);
    const std::vector<MicroBatch>* batches = nullptr;
    {
      profiler::Scope data_scope(&tracer, l.data_name, profiler::Category::data);
      batches = &l.data.fill(s);
    }
    l.engine.set_lr_scale(l.data.lr_scale());
    if (l.data.documents()) l.engine.set_data_position(l.data.position());
    loss = l.engine.train_batch(*batches);
  }
  // On a GPU the step ends when its last kernel does, not when the host has
  // queued it: wait for the device before reading the clock (the next step's
  // first loss read would wait for it anyway).
  l.engine.backend().synchronize();
  ProfileWindow::end_step(tracer);
  return l.engine.mean_over_ranks(loss);
}

// What step `step` did, measured once for the progress line, the summary and
// the recorder.
StepRecord step_record(const Loop& l, int64_t step, double loss, double ms) {
  StepRecord r;
  r.step = step;
  r.loss = loss;
  r.traced = l.window.traced(step);
  const auto& st = l.engine.last_step();
  r.skipped = st.skipped;
  r.lr = st.lr;
  r.loss_scale = st.loss_scale;
  r.grad_norm = st.grad_norm;
  r.ms = ms;
  // Tokens with a target: padding counts neither as tokens nor as FLOPs.
  const double share = l.data.counts().real_tokens / l.data.step_capacity();
  r.tokens_per_s = double(l.data.counts().real_tokens) / (ms / 1e3);
  r.flops_per_s = l.flops_per_step * share / (ms / 1e3);
  const auto totals = l.engine.comm_tracer().step_totals(int32_t(step));
  r.comm_ms = double(totals.comm_ns) / 1e6;
  r.exposed_comm_ms = double(totals.exposed_ns) / 1e6;
  r.bubble_ms = double(totals.bubble_ns) / 1e6;
  r.pipeline_waiting = pipeline_waiting(l.engine);
  r.timers = l.engine.last_step_times();
  return r;
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

// After a step: its record, the progress line, a periodic checkpoint, and the
// caller's hook.
void finish_step(Loop& l, TrainSummary& out, const StepRecord& r) {
  l.records.push_back(r);
  out.training.losses.push_back(r.loss);
  const BatchCounts& n = l.data.counts();
  l.tokens += double(n.real_tokens);
  if (l.data.documents())
    out.batches.push_back({{"step", r.step},
                           {"lr", r.lr},
                           {"sequences", n.sequences},
                           {"tokens", n.real_tokens},
                           {"padding", n.padded_tokens}});
  l.recorder.on_step(r);
  const int64_t done = r.step - l.first;
  const int every = l.cfg.steps_per_print;
  if (done == 1 || done == l.steps || (every > 0 && r.step % every == 0)) {
    l.say(fmt::format(
        "step {:>5} | loss {:.4f} | lr {:.3e} | scale {:g}{} | {:.1f} ms | {:.0f} tok/s | {}",
        r.step, r.loss, r.lr, r.loss_scale, r.skipped ? " (skipped)" : "", r.ms, r.tokens_per_s,
        base::format_flop_rate(r.flops_per_s)));
    // DeepSpeed's wall-clock breakdown of this step (rank 0's timers).
    if (l.cfg.wall_clock_breakdown)
      for (const auto& line : r.timers.log_lines()) l.say(line);
  }
  rotate_after(l, r.loss);
  if (const auto kind = l.policy.at_step(r.step); kind != SavePolicy::Kind::none)
    save_unless_diverging(l, kind, r.loss);
  if (l.opts.after_step) l.opts.after_step(r.step);
}

// hybrid.rollout after a step that is due: generation on the weights it left,
// and DeepSpeed's breakdown line.
void rollout_after(Loop& l, Rollouts& rollouts, TrainSummary& out, int64_t step) {
  if (!rollouts.due(step)) return;
  const RolloutBreakdown b = rollouts.run(step);
  for (const auto& line : b.lines()) l.say(line);
  out.rollouts.push_back(b.to_json());
  l.recorder.on_rollout(rollouts.row(b));
}

void run_loop(Loop& l, Rollouts& rollouts, Validation& validation, TrainSummary& out) {
  auto& tracer = l.engine.tracer();
  l.step_name = tracer.intern("step");
  l.data_name = tracer.intern("data");
  rollouts.start();
  for (int64_t s = l.first; s < l.first + l.steps; ++s) {
    l.window.begin_step(tracer, s + 1);
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = run_step(l, s);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rollouts.add_training(ms);
    finish_step(l, out, step_record(l, s + 1, loss, ms));
    rollout_after(l, rollouts, out, s + 1);
    validation.after_step(s + 1, s + 1 == l.first + l.steps, out, l.say);
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

// The summary's reports once the loop and the outputs are done.
void summarize(const Loop& l, TrainSummary& out) {
  const double steps = double(std::max<size_t>(1, l.records.size()));
  // Documents: the FLOPs of the tokens with a target, as the steps' rates.
  out.throughput.flops_per_step = l.flops_per_step * (l.tokens / steps) / l.data.step_capacity();
  summarize_steps(l.records, l.tokens / steps, l.cfg.seq_len(), out);
  out.training.global_step = l.engine.global_step();
  out.training.skipped_steps = l.engine.skipped_steps();
  out.pipeline = pipeline_report(l.cfg, l.engine, l.records);  // collective
  add_memory_prediction(l.cfg, l.engine, out.memory);
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
  Rollouts rollouts(cfg, *engine);  // its prompts checked before any step runs
  TokenDataset val;
  Loop l(cfg, opts, *engine, recorder, open_step_data(cfg, *engine, out, val), say);
  l.data.resume(engine->global_step(), engine->data_position());
  if (const auto line = l.data.describe(); !line.empty()) say(line);
  Validation validation(cfg, *engine, std::move(val));
  if (const auto w = l.policy.warning(); !w.empty()) say(w);
  l.flops_per_step = out.throughput.flops_per_step =
      model_flops_per_step(cfg, engine->model().matmul_params(), engine->data_parallel_size());
  recorder.attach(*engine, l.window);
  const CommMeter comm(*engine);
  run_loop(l, rollouts, validation, out);
  out.memory = measure_memory(*engine);  // training's peaks, before any export
  out.comm = comm.report(*engine, l.records);
  save_outputs(l, out.training.losses.back());
  summarize(l, out);
  std::vector<bool> skipped;
  for (const StepRecord& r : l.records) skipped.push_back(r.skipped);
  if (auto why = divergence(out.training.losses, skipped); !why.empty())
    out.status = RunStatus::diverged, out.error_kind = "Diverged", out.error = std::move(why);
  for (const auto& line : summary_lines(out)) say(line);
  recorder.finish(out);
  out.run_id = recorder.run_id();
  if (out.run_id && !opts.db.empty())
    say(fmt::format("recorded as run {} in {}", out.run_id, opts.db));
}

}  // namespace

TrainSummary run_training(const Config& cfg, const TrainOptions& opts) {
  TrainSummary s;
  std::unique_ptr<RunRecorder> recorder;
  try {
    s.rank = base::launcher_env().rank;  // valid before MPI starts
    recorder = std::make_unique<RunRecorder>(cfg, opts.db, opts.run_name, s.rank);
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
