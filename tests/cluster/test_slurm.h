// The real Slurm of the cluster tests: scripts/testslurm.sh brings up Debian's
// slurmctld and slurmd (this machine the one node) for the life of a TestSlurm
// and takes them down after. Tests skip, saying why, where Slurm is not
// installed or cannot start; CTest runs them one at a time (RESOURCE_LOCK
// testcluster), as the daemons, their ports and state are global.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"

namespace hybrid::test {

class TestSlurm {
 public:
  TestSlurm() {
    const auto r = run_command(script() + " up");
    up_ = r.exit_code == 0;
    why_ = r.output;
    unavailable_ = r.exit_code == 2;
    env_ = run_command(script() + " env").output;
    env_ = env_.substr(env_.find(' ') + 1);  // "export K=V\n" -> "K=V"
    env_.erase(env_.find_last_not_of("\n") + 1);
  }
  ~TestSlurm() {
    if (up_) run_command(script() + " down");
  }
  TestSlurm(const TestSlurm&) = delete;
  TestSlurm& operator=(const TestSlurm&) = delete;

  static std::string script() { return std::string(HYBRID_SOURCE_DIR) + "/scripts/testslurm.sh"; }
  // A Slurm command (srun, squeue, scancel, sbatch, scontrol) with this Slurm's config.
  CommandResult run(const std::string& command) const {
    return run_command("env " + env_ + " " + command);
  }
  // The jobs in the queue, "NAME STATE" a line ("" when none).
  std::string queue() const { return run("squeue -h -o '%j %T'").output; }
  // Waits (up to `seconds`) until a job named `name` is in `state` (RUNNING, PENDING).
  bool wait_for_job(const std::string& name, const std::string& state, double seconds) const {
    for (auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
         std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(100)))
      if (queue().find(name + " " + state) != std::string::npos) return true;
    return false;
  }

  bool up_ = false, unavailable_ = false;
  std::string why_, env_;
};

// A sweep's trials by their first key (mbs=1), or by the whole key, read from
// the store, whose integrity is checked on the way.
inline std::map<std::string, profiler::TrialRow> trials_by_mbs(const std::string& db,
                                                               bool whole_key = false) {
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  std::map<std::string, profiler::TrialRow> by_mbs;
  const auto sweeps = store.sweeps();
  EXPECT_EQ(sweeps.size(), 1u);
  if (sweeps.empty()) return by_mbs;
  for (const auto& t : store.trials(sweeps[0].id))
    by_mbs[whole_key ? t.key : t.key.substr(0, t.key.find(','))] = t;
  return by_mbs;
}

// A config whose trial holds about 110 MiB resident: over a --mem=40M job once
// its first step is done. The OOM tests hold that trial there
// (hybrid-train --hold-after-step 1) until Slurm's 1 s memory sampling kills it.
inline nlohmann::json memory_hungry_config() {
  return autotune::test::tiny_config(nlohmann::json::parse(R"({"hybrid": {"model": {"n_layer": 4,
      "n_embd": 256, "n_head": 4, "vocab_size": 4096, "seq_len": 64}}})"));
}
constexpr int kMemoryHungrySteps = 8;

// A sweep's files in `dir`: cfg.json (`config`), space.json (`space`, JSON
// text) and the launcher script launch.sh (`launcher`: a shell script that
// routes each trial by its key, its first argument). Returns launch.sh's path.
inline std::string write_sweep_files(const autotune::test::TempDir& dir,
                                     const nlohmann::json& config, const char* space,
                                     const std::string& launcher = "") {
  autotune::test::write_json(dir / "cfg.json", config);
  autotune::test::write_json(dir / "space.json", nlohmann::json::parse(space));
  const std::string launch = dir / "launch.sh";
  if (!launcher.empty()) std::ofstream(launch) << "#!/bin/sh\n" << launcher;
  return launch;
}

// A command (a sweep) run on a thread of its own while the test acts on what
// it started; result() waits for it to end.
class InBackground {
 public:
  explicit InBackground(const std::string& command)
      : thread_([this, command] { result_ = run_command(command); }) {}
  ~InBackground() { result(); }
  InBackground(const InBackground&) = delete;
  InBackground& operator=(const InBackground&) = delete;
  const CommandResult& result() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  CommandResult result_;
  std::thread thread_;  // after result_: it starts writing to it at once
};

// "hybrid-tune ... " over `dir`/cfg.json for `steps` steps, with the options
// every Slurm test shares and `extra` (the launcher, the space).
inline std::string slurm_sweep(const TestSlurm& slurm, const autotune::test::TempDir& dir,
                               const std::string& extra, int steps = 6) {
  return fmt::format(
      "env {} {} --config {} --steps {} --start-step 2 --early-stop 0 --no-probe --remeasure 0 "
      "--confirm-rounds 0 --db {} --out {} {}",
      slurm.env_, autotune::test::tune_bin(), dir / "cfg.json", steps, dir / "tune.db",
      dir / "best.json", extra);
}

}  // namespace hybrid::test

#define HYBRID_REQUIRE_SLURM(slurm)                                              \
  do {                                                                           \
    if ((slurm).unavailable_) GTEST_SKIP() << "no Slurm here: " << (slurm).why_; \
    ASSERT_TRUE((slurm).up_) << (slurm).why_;                                    \
  } while (0)

namespace hybrid::test {

// The Slurm tests' fixture: a Slurm of the test's own for its life (the test
// skips, saying why, where there is none) and a temporary directory.
class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override { HYBRID_REQUIRE_SLURM(slurm_); }

  TestSlurm slurm_;
  TempDir dir_;
};

}  // namespace hybrid::test
