// hybrid-tune: finds the fastest config that fits in memory.
//   hybrid-tune --config ds.json [--space space.json] [--nprocs N] [--strategy grid|random|model]
//   hybrid-tune probe [--nprocs N] [--launcher T] [--hostfile F] [--db DB]
//   hybrid-tune predict --config ds.json --world N [--hosts H] [--db DB]
//   hybrid-tune probe-worker --out F   (what `probe` runs under the launcher)
//   hybrid-tune generate --spec gen.json [--out best.json] [--dry-run]
//                       (hybrid-generate's batch size and cache dtype; with "config" in the
//                       spec: hybrid-train's rollouts, inference_tp_size and pin_parameters too)
// Exit status: 0 a best config was written (or --dry-run / probe done), 1 an
// error (message names the input at fault), 3 no trial succeeded, 130 interrupted.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "autotune/generate_confirm.h"
#include "autotune/generate_sweep.h"
#include "autotune/launcher.h"
#include "autotune/predict.h"
#include "autotune/probe.h"
#include "autotune/rollout_sweep.h"
#include "autotune/sweep.h"
#include "autotune/sweep_plan.h"
#include "autotune/trial_runner.h"
#include "autotune/tune_error.h"
#include "base/atomic_file.h"
#include "base/cli_checks.h"
#include "base/host.h"
#include "base/units.h"
#include "engine/generate/prompts.h"
#include "profiler/store/run_store.h"

using namespace hybrid::autotune;

namespace {

std::atomic<bool> g_cancel{false};

extern "C" void on_signal(int) { g_cancel.store(true); }

// What to tune, where its trials run, where the results go.
void add_target_options(CLI::App& app, TuneOptions& o) {
  app.add_option("--config", o.config, "ds_config.json to tune (its \"autotuning\" block is read)")
      ->check(CLI::ExistingFile);
  app.add_option("--space", o.space, "search space JSON (default: micro-batch sizes x ZeRO stages)")
      ->check(CLI::ExistingFile);
  app.add_option("--nprocs", o.nprocs, "ranks per trial (default 1)")
      ->check(hybrid::base::at_least(1));
  app.add_option("--launcher", o.launcher,
                 "launcher template, e.g. \"mpirun -np {nprocs} {cmd}\" or \"srun -n {nprocs} "
                 "{cmd}\"; placeholders "
                 "{nprocs} {cmd} {key} {config} {dir} {hostfile} (default: mpirun for N > 1, "
                 "none for 1)");
  app.add_option("--hostfile", o.hostfile,
                 "Open MPI hostfile: trials run across its hosts (default launcher: mpirun "
                 "--hostfile FILE -np N)")
      ->check(CLI::ExistingFile);
  app.add_option("--strategy", o.strategy,
                 "grid | random | model (default: autotuning.tuner_type, else grid)");
  app.add_option(
      "--metric", o.metric,
      "throughput (samples/s) | latency (ms/step, lower is better) | flops | tokens_per_s "
      "(default: autotuning.metric, else throughput)");
  app.add_option("--db", o.db, "run store (SQLite)")->capture_default_str();
  app.add_option("--out", o.out,
                 "where to write the best config (default: best.json beside the database)");
  app.add_flag("--dry-run", o.dry_run,
               "list candidates with predicted memory and step time; run nothing");
}

// When the sweep stops starting trials, and when a trial is killed.
void add_limit_options(CLI::App& app, TuneOptions& o) {
  app.add_option("--max-trials", o.max_trials,
                 "at most this many trials (default: autotuning.tuner_num_trials, 50)")
      ->check(hybrid::base::at_least(1));
  app.add_option("--time-budget", o.time_budget_s,
                 "stop starting trials after this many seconds (0: none)")
      ->check(hybrid::base::at_least(0));
  app.add_option("--early-stop", o.early_stop,
                 "stop after K trials without improvement (default: "
                 "autotuning.tuner_early_stopping, 5; 0: off)")
      ->check(hybrid::base::at_least(0));
  app.add_option("--trial-timeout", o.trial_timeout_s,
                 "seconds before a trial's process group is killed")
      ->capture_default_str()
      ->check(hybrid::base::greater_than(0));
}

// How each trial runs and is measured.
void add_trial_options(CLI::App& app, TuneOptions& o) {
  app.add_option("--steps", o.steps, "steps per trial (default: autotuning.end_profile_step, 5)")
      ->check(hybrid::base::at_least(1));
  app.add_option("--start-step", o.start_step,
                 "first measured step (default: autotuning.start_profile_step, 3)")
      ->check(hybrid::base::at_least(1));
  app.add_option("--statistic", o.statistic,
                 "median | min of the measured steps' times (min: steadier on a machine shared "
                 "with other work)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the random strategy")->capture_default_str();
  app.add_option("--name", o.name, "sweep name (default: <config>/<strategy>/<metric>/np<N>)");
  app.add_flag("--no-prune", o.no_prune,
               "run candidates the memory model predicts over budget (to check the model)");
  app.add_flag("--no-probe", o.no_probe,
               "never run a probe automatically (use the stored one or defaults)");
  app.add_option("--train-bin", o.train_bin,
                 "hybrid-train executable (default: beside hybrid-tune)");
}

// Noise: when a model sweep stops gaining, when a trial is re-measured, how ties
// between winners are broken.
void add_noise_options(CLI::App& app, TuneOptions& o) {
  app.add_option("--min-gain", o.min_gain,
                 "model strategy: stop when no candidate is predicted to improve by more than this "
                 "fraction")
      ->capture_default_str()
      ->check(hybrid::base::at_least(0));
  app.add_option("--noise-threshold", o.noise_threshold,
                 "robust CV (IQR / (1.349 median)) of a trial's step times above which it is "
                 "re-measured, then marked noisy")
      ->capture_default_str();
  app.add_option("--remeasure", o.remeasure, "re-measurements of a noisy trial")
      ->capture_default_str();
  app.add_option("--confirm-rounds", o.confirm_rounds,
                 "interleaved rounds of the confirmation run that breaks a tie between winners "
                 "within noise (0: report the tie, run nothing)")
      ->capture_default_str();
  app.add_flag("--confirm-best", o.confirm_best,
               "confirm the best trial against the runner-up in interleaved rounds even when their "
               "intervals are apart (guards against load that changed between trials)");
}

// In this order: --help lists them so.
void add_tune_options(CLI::App& app, TuneOptions& o) {
  add_target_options(app, o);
  add_limit_options(app, o);
  add_trial_options(app, o);
  add_noise_options(app, o);
}

// `hybrid-tune probe`: its options, then the run (results stored in the run store).
struct ProbeCommand {
  int nprocs = 1;
  std::string launcher, hostfile, db = "results/hybrid.db";
  ProbeOptions po;
  double timeout = 300;
  uint64_t max_message = uint64_t(16) << 20;
};

CLI::App* add_probe_command(CLI::App& app, ProbeCommand& c) {
  auto* probe = app.add_subcommand(
      "probe", "measure GEMM FLOP/s and collective bandwidth on the launcher's ranks");
  probe->add_option("--nprocs", c.nprocs, "ranks")->check(hybrid::base::at_least(1));
  probe->add_option("--launcher", c.launcher, "launcher template (as for tuning)");
  probe->add_option("--hostfile", c.hostfile, "Open MPI hostfile (as for tuning)")
      ->check(CLI::ExistingFile);
  probe->add_option("--db", c.db, "run store to record the probe in")->capture_default_str();
  probe->add_option("--device", c.po.device, "auto | cpu | cuda")->capture_default_str();
  probe->add_option("--dtype", c.po.dtype, "GEMM dtype: fp32 | bf16 | fp16")->capture_default_str();
  probe->add_option("--gemm-size", c.po.gemm_size,
                    "M = N = K of the GEMM (default 1024 CPU, 8192 GPU)");
  probe
      ->add_option("--max-message", c.max_message,
                   "largest collective message in bytes (sizes 4 KiB, x4, ...)")
      ->capture_default_str()
      ->check(hybrid::base::at_least(1));
  probe->add_option("--timeout", c.timeout, "seconds")->capture_default_str();
  return probe;
}

int run_probe_command(ProbeCommand c) {
  for (uint64_t b = 4096; b <= c.max_message; b *= 4) c.po.message_bytes.push_back(b);
  const std::string dir = (std::filesystem::path(c.db).parent_path() / "tune" / "probe").string();
  const auto hosts = c.hostfile.empty() ? std::vector<HostSlots>{} : read_hostfile(c.hostfile);
  if (hosts.size() >= 2 && !c.launcher.empty())
    throw TuneError(
        "probe: with a hostfile of several hosts the probe launches each link class "
        "itself; leave out --launcher");
  auto p =
      hosts.size() >= 2
          ? launch_probe_on_hosts(self_executable(), c.nprocs, hosts, c.po, dir, c.timeout)
          : launch_probe(self_executable(), c.nprocs,
                         resolve_launcher(c.launcher, c.nprocs, c.hostfile), c.po, dir, c.timeout);
  p.host = hybrid::base::host_name();
  hybrid::profiler::RunStore store(c.db);
  p.id = store.add_probe(p);
  std::cout << format_probe(p) << "stored as probe " << p.id << " in " << c.db << "\n";
  return 0;
}

// `hybrid-tune predict`: candidates ranked for a larger cluster (autotune/predict.h).
CLI::App* add_predict_command(CLI::App& app, PredictOptions& o) {
  auto* predict = app.add_subcommand(
      "predict",
      "rank a config's candidates for N ranks on H hosts from the trials and probe in the store");
  predict->add_option("--config", o.config, "ds_config.json (as for tuning)")
      ->required()
      ->check(CLI::ExistingFile);
  predict->add_option("--space", o.space, "search space JSON (as for tuning)")
      ->check(CLI::ExistingFile);
  predict->add_option("--world", o.world, "ranks of the target cluster")->required();
  predict->add_option("--hosts", o.hosts, "hosts the ranks are spread over")->capture_default_str();
  predict->add_option("--db", o.db, "run store holding the trials and the probe")
      ->capture_default_str();
  predict->add_option("--top", o.top, "print only the best K candidates (0: all)")
      ->capture_default_str();
  return predict;
}

// `hybrid-tune probe-worker`: one rank of `probe`, under the launcher.
struct WorkerCommand {
  std::string out;
  ProbeOptions po;
};

CLI::App* add_worker_command(CLI::App& app, WorkerCommand& c) {
  auto* worker = app.add_subcommand("probe-worker", "one rank of `probe` (run under the launcher)");
  worker->group("");
  worker->add_option("--out", c.out, "rank 0 writes the result here")->required();
  worker->add_option("--device", c.po.device);
  worker->add_option("--dtype", c.po.dtype);
  worker->add_option("--gemm-size", c.po.gemm_size);
  worker->add_option("--message-bytes", c.po.message_bytes);
  return worker;
}

// `hybrid-tune generate`: hybrid-generate's batch size and cache dtype.
struct GenerateCommand {
  std::string spec, dir = "tune/generate", out, generate_bin, train_bin, db;
  bool dry_run = false, confirm_best = false;
  int confirm_rounds = 3, remeasure = 2;
  double noise_threshold = 0.10;
};

CLI::App* add_generate_command(CLI::App& app, GenerateCommand& c) {
  auto* gen = app.add_subcommand(
      "generate",
      "tune hybrid-generate's batch size and cache dtype for tokens/s or p99 latency; a spec with "
      "\"config\": hybrid-train's rollouts over inference_tp_size, pin_parameters, batch and "
      "cache dtype on the spec's nprocs ranks");
  gen->add_option("--spec", c.spec, "the generation spec JSON (docs/generation.md)")
      ->required()
      ->check(CLI::ExistingFile);
  gen->add_option("--dir", c.dir, "trial directories go here")->capture_default_str();
  gen->add_option("--out", c.out, "the result JSON (default: DIR/best.json)");
  gen->add_option("--generate-bin", c.generate_bin,
                  "hybrid-generate executable (default: beside hybrid-tune)");
  gen->add_option(
      "--train-bin", c.train_bin,
      "hybrid-train executable of a rollout spec's trials (default: beside hybrid-tune)");
  gen->add_option("--db", c.db,
                  "run store (SQLite) every trial records its run in (default: none)");
  gen->add_option("--confirm-rounds", c.confirm_rounds,
                  "interleaved rounds that run candidates within noise of the best again "
                  "(0: report the tie, run nothing)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--noise-threshold", c.noise_threshold,
                  "robust CV of a trial's decode steps above which it is measured again")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--remeasure", c.remeasure, "extra measurements of a noisy trial")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  gen->add_flag("--confirm-best", c.confirm_best,
                "confirm the best against the runner-up even when they are apart");
  gen->add_flag("--dry-run", c.dry_run, "list candidates with predicted memory; run nothing");
  return gen;
}

void write_result(const std::string& out, const nlohmann::json& j) {
  std::filesystem::create_directories(std::filesystem::absolute(out).parent_path());
  hybrid::base::write_file_atomic(out, j.dump(2) + "\n");
  std::cout << "results: " << out << "\n";
}

// --dry-run: each candidate's predicted memory, and why it would not run.
template <class Candidate>
void print_predictions(const std::vector<Candidate>& candidates) {
  for (const auto& k : candidates)
    std::cout << k.key() << ": predicted " << hybrid::base::format_bytes(k.predicted_bytes)
              << " (kv_cache " << hybrid::base::format_bytes(k.predicted_cache) << ")"
              << (k.pruned.empty() ? "" : ", pruned: " + k.pruned) << "\n";
}

// --db opened once before any trial: a store that cannot be opened or is not
// ours is refused by its error, instead of failing every trial.
void open_store_first(const std::string& db) {
  if (!db.empty()) hybrid::profiler::RunStore store(db);
}

// A spec naming a training config: hybrid-train's rollouts (autotune/rollout_space.h).
int run_rollout_command(const GenerateCommand& c, const RolloutSpec& s) {
  const auto candidates = rollout_candidates(s, hybrid::engine::read_prompts_file(s.prompts));
  if (c.dry_run) {
    print_predictions(candidates);
    return 0;
  }
  open_store_first(c.db);
  RolloutSweepOptions o;
  o.train_bin = c.train_bin.empty() ? find_train_binary(self_executable()) : c.train_bin;
  o.dir = c.dir;
  o.db = c.db;
  o.cancel = &g_cancel;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const auto r = run_rollout_sweep(s, candidates, o, std::cout);
  write_result(c.out.empty() ? c.dir + "/best.json" : c.out, rollout_sweep_json(s, r));
  if (r.interrupted) return 130;
  return r.best ? 0 : 3;
}

int run_generate_command(const GenerateCommand& c) {
  if (const auto rollout = load_rollout_spec(c.spec)) return run_rollout_command(c, *rollout);
  const GenerateSpec s = load_generate_spec(c.spec);
  const auto prompts = hybrid::engine::read_prompts_file(s.prompts);
  const auto candidates = generate_candidates(s, generate_target(s), prompts);
  if (c.dry_run) {
    print_predictions(candidates);
    return 0;
  }
  open_store_first(c.db);
  GenerateSweepOptions o;
  o.generate_bin = c.generate_bin.empty() ? find_tool_binary(self_executable(), "hybrid-generate")
                                          : c.generate_bin;
  o.dir = c.dir;
  o.db = c.db;
  o.noise_threshold = c.noise_threshold;
  o.remeasure = c.remeasure;
  o.cancel = &g_cancel;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto r = run_generate_sweep(s, candidates, o, std::cout);
  std::optional<GenerateConfirmation> confirmed;
  if (!r.interrupted) {
    confirmed = confirm_generate(s, r, o, c.confirm_rounds, c.confirm_best, std::cout);
    r.interrupted = g_cancel.load();
  }
  nlohmann::json result = generate_sweep_json(s, r, o.generate_bin);
  if (confirmed) add_confirmation_json(result, r, *confirmed);
  write_result(c.out.empty() ? c.dir + "/best.json" : c.out, result);
  if (r.interrupted) return 130;
  return r.best ? 0 : 3;
}

int run_tune(const TuneOptions& o) {
  if (o.config.empty()) {
    std::fprintf(stderr, "hybrid-tune: --config is required (see --help)\n");
    return 1;
  }
  const SweepPlan plan = plan_sweep(o);
  if (plan.settings.dry_run) {
    print_dry_run(plan, std::cout);
    return 0;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const SweepResult r = run_sweep(plan, std::cout, &g_cancel);
  if (r.interrupted) return 130;
  return r.best ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hybrid-tune: finds the fastest ZeRO / batch config that fits in memory, trials as real "
      "processes, "
      "evidence in SQLite"};
  app.require_subcommand(0, 1);
  TuneOptions o;
  add_tune_options(app, o);
  ProbeCommand probe_cmd;
  auto* probe = add_probe_command(app, probe_cmd);
  WorkerCommand worker_cmd;
  auto* worker = add_worker_command(app, worker_cmd);
  PredictOptions predict_opts;
  auto* predict_cmd = add_predict_command(app, predict_opts);
  GenerateCommand generate_cmd;
  auto* generate = add_generate_command(app, generate_cmd);
  if (auto status = hybrid::base::parse_command_line(app, argc, argv, 1)) return *status;

  try {
    if (*worker) {
      run_probe_worker(worker_cmd.po, worker_cmd.out);
      return 0;
    }
    if (*probe) return run_probe_command(probe_cmd);
    if (*generate) return run_generate_command(generate_cmd);
    if (*predict_cmd) {
      print_prediction(predict(predict_opts), std::cout, predict_opts.top);
      return 0;
    }
    return run_tune(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hybrid-tune: %s\n", e.what());
    return 1;
  }
}
