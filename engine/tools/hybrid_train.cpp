// hybrid-train: trains the model a ds_config.json describes.
//   hybrid-train --config cfg.json [--steps N] [--db FILE] [--save DIR] [--load DIR [--tag T]]
//                [--result FILE]
//   mpirun -np 4 hybrid-train --config cfg.json ...
// Exit status: 0 ok, 2 config error or bad argument (an output path that cannot
// be written, a checkpoint folder of another model), 3 out of memory, 4 diverged
// (the loss went NaN or infinite: engine/divergence.h), 1 any other failure; the
// --result JSON says the same in a structured form.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

#include "base/cli_checks.h"
#include "engine/comm/factory.h"
#include "engine/config/config.h"
#include "engine/trainer.h"

namespace {

using hybrid::profiler::RunStatus;

int exit_code(RunStatus status) {
  switch (status) {
    case RunStatus::ok:
      return 0;
    case RunStatus::config_error:
      return 2;
    case RunStatus::oom:
      return 3;
    case RunStatus::diverged:
      return 4;
    default:
      return 1;
  }
}

// Testing hooks, each at step N (after that step's checkpoint is saved, or
// inside it once its files are written and before meta.json and latest are):
// a crash (SIGKILL) at a known point, for the tests of resuming and of failed
// trials; or a hold, the process kept still there until something kills it
// (the test, a scheduler's limit or a tuner's timeout), so that a test acts
// while it is there rather than at a moment guessed from outside. A hold says
// "test-hold: <where> <N>" on stdout and gives up after 10 minutes, so that a
// failed test leaves no process behind for long.
struct TestHooks {
  int64_t kill_after_step = 0, kill_mid_save = 0, hold_after_step = 0, hold_mid_save = 0;

  static void act(int64_t step, int64_t kill_at, int64_t hold_at, const char* where) {
    if (step == kill_at) {
      std::fflush(stdout);
      ::kill(::getpid(), SIGKILL);
    }
    if (step == hold_at) {
      std::printf("test-hold: %s %lld\n", where, static_cast<long long>(step));
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::minutes(10));
      std::_Exit(1);
    }
  }
  void install(hybrid::TrainOptions& opts) const {
    const TestHooks h = *this;
    if (kill_after_step > 0 || hold_after_step > 0)
      opts.after_step = [h](int64_t s) {
        act(s, h.kill_after_step, h.hold_after_step, "after-step");
      };
    if (kill_mid_save > 0 || hold_mid_save > 0)
      opts.before_publish = [h](int64_t s) {
        act(s, h.kill_mid_save, h.hold_mid_save, "mid-save");
      };
  }
  // The testing flags (hidden from --help).
  void add_options(CLI::App& app) {
    const struct {
      const char* flag;
      int64_t* step;
      const char* help;
    } flags[] = {
        {"--kill-after-step", &kill_after_step, "testing: SIGKILL this process after step N"},
        {"--kill-mid-save", &kill_mid_save,
         "testing: SIGKILL this process inside step N's checkpoint, once its files are "
         "written and before meta.json and latest are"},
        {"--hold-after-step", &hold_after_step,
         "testing: hold this process still after step N until it is killed"},
        {"--hold-mid-save", &hold_mid_save,
         "testing: hold this process still inside step N's checkpoint (where "
         "--kill-mid-save kills) until it is killed"},
    };
    for (const auto& f : flags) app.add_option(f.flag, *f.step, f.help)->group("");
  }
};

// What to train and where the run is recorded.
void add_run_options(CLI::App& app, std::string& config_path, hybrid::TrainOptions& opts) {
  app.add_option("--config", config_path, "ds_config.json (DeepSpeed keys + a \"hybrid\" block)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--steps", opts.steps, "optimizer steps to run (default 20)")
      ->check(hybrid::base::at_least(1));
  app.add_option("--db", opts.db,
                 "run store (SQLite) to record the run in, e.g. results/hybrid.db");
  app.add_option("--name", opts.run_name, "name of the run in the store");
}

void add_checkpoint_options(CLI::App& app, hybrid::TrainOptions& opts) {
  app.add_option("--save", opts.save_dir,
                 "checkpoint directory: a checkpoint at the end, and on hybrid.checkpoint's "
                 "intervals (default: hybrid.checkpoint.dir)");
  app.add_option("--save-every", opts.save_every,
                 "also save an optimizer-state checkpoint every N steps (overrides "
                 "hybrid.checkpoint.optimizer_interval)")
      ->check(hybrid::base::at_least(0));
  app.add_option("--load", opts.load_dir, "resume from a checkpoint directory (its `latest` tag)");
  app.add_option("--tag,--load-tag", opts.load_tag,
                 "with --load: the tag to resume from instead of `latest`");
}

// What the run writes besides its checkpoints.
void add_output_options(CLI::App& app, hybrid::TrainOptions& opts) {
  app.add_option("--result", opts.result_path, "write a JSON summary here (also on failure)");
  app.add_option("--export-hf", opts.export_hf_dir,
                 "write the final fp32 weights (all ranks consolidated) as a Hugging Face "
                 "directory: config.json + model.safetensors (shards with an index past 2 GiB)");
  app.add_option("--export-llmc", opts.export_path,
                 "write the final fp32 weights (all ranks consolidated) as an llm.c checkpoint");
  app.add_flag("--quiet", opts.quiet, "print nothing but errors");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hybrid-train: mixed-precision ZeRO training of decoder models (GPT-2, Llama) from a "
      "DeepSpeed config"};
  std::string config_path;
  hybrid::TrainOptions opts;
  add_run_options(app, config_path, opts);
  add_checkpoint_options(app, opts);
  add_output_options(app, opts);
  TestHooks hooks;
  hooks.add_options(app);
  if (auto status = hybrid::base::parse_command_line(app, argc, argv, 2)) return *status;
  hooks.install(opts);

  hybrid::engine::Config cfg;
  hybrid::TrainSummary summary;
  try {
    cfg = hybrid::engine::load_config(config_path, hybrid::engine::comm::launcher_world_size());
  } catch (const std::exception& e) {
    summary.status = RunStatus::config_error;
    summary.error_kind = "ConfigError";
    summary.error = e.what();
    std::fprintf(stderr, "hybrid-train: %s\n", e.what());
    if (!opts.result_path.empty()) hybrid::write_train_result(opts.result_path, summary);
    return exit_code(summary.status);
  }
  summary = hybrid::run_training(cfg, opts);
  if (summary.status != RunStatus::ok)
    std::fprintf(stderr, "hybrid-train: %s\n", summary.error.c_str());
  return exit_code(summary.status);
}
