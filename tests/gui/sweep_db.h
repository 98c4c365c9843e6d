// A run store written by a real short sweep: hybrid-tune runs a grid of trials
// (micro batch 1, 2, 4 × ZeRO 1, 2 on 2 ranks, mpirun) as real hybrid-train
// processes, each recording its run (steps, per-rank step rows, layer stats and
// the events of its profiled step, comm stats, memory); one candidate is pruned by
// the memory model, and a second sweep runs it anyway (--no-prune) so the
// database also holds a real out-of-memory trial.
//
// Built once per build tree at HYBRID_BINARY_DIR/tests/gui_sweep/hybrid.db and
// rebuilt when hybrid-tune or hybrid-train is newer; written in a temporary
// directory and renamed into place, so tests running in parallel never see half
// a database. About 10 s on 2 cores.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "tests/gui/view_test_util.h"

namespace hybrid::gui::test {

struct SweepDb {
  std::filesystem::path path;  // empty when it could not be built
  std::string error;           // why (the tools are missing, the sweep failed)
};

inline const std::string kSweepConfig = R"({
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 2,
  "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
  "zero_optimization": {"stage": 1, "overlap_comm": true},
  "flops_profiler": {"enabled": true, "profile_step": 3},
  "steps_per_print": 1000,
  "hybrid": {
    "model": {"type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 512, "seq_len": 32},
    "data": "synthetic",
    "memory_budget": "12MiB",
    "threads": 1,
    "seed": 1234
  }
})";

inline const std::string kSweepSpace =
    R"({"train_micro_batch_size_per_gpu": [1, 2, 4, 64], "zero_optimization": {"stage": [1, 2]}})";
inline const std::string kOomSpace =
    R"({"train_micro_batch_size_per_gpu": [64], "zero_optimization": {"stage": [2]}})";

inline std::filesystem::file_time_type newest(std::initializer_list<std::filesystem::path> files) {
  auto t = std::filesystem::file_time_type::min();  // (the file clock's epoch is in 2174)
  for (const auto& f : files) t = std::max(t, std::filesystem::last_write_time(f));
  return t;
}

inline SweepDb build_sweep_db() {
  namespace fs = std::filesystem;
  SweepDb out;
  const fs::path bin = HYBRID_BINARY_DIR;
  const fs::path tune = bin / "autotune" / "hybrid-tune", train = bin / "engine" / "hybrid-train";
  if (!fs::exists(tune) || !fs::exists(train)) {
    out.error =
        "hybrid-tune or hybrid-train is not built (" + tune.string() + ", " + train.string() + ")";
    return out;
  }
  const fs::path home = bin / "tests" / "gui_sweep", db = home / "hybrid.db";
  std::error_code ec;
  fs::create_directories(home, ec);
  // ctest runs each test as its own process, several at once: one builds, the others wait.
  const int lock = ::open((home / ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);  // releases the lock
    }
  } unlock{lock};
  if (fs::exists(db, ec) && fs::last_write_time(db) > newest({tune, train})) {
    out.path = db;
    return out;
  }
  // Open MPI as root in a container, on one host (as scripts/mpi-env.sh; ctest sets them too).
  for (auto [k, v] : {std::pair{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                      {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                      {"OMPI_MCA_rmaps_base_oversubscribe", "1"},
                      {"OMPI_MCA_pml", "ob1"},
                      {"OMPI_MCA_btl", "self,vader"},
                      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
                      {"OMPI_MCA_hwloc_base_binding_policy", "none"}})
    setenv(k, v, 0);
  const fs::path work = home / ("build." + std::to_string(::getpid()));
  fs::remove_all(work, ec);
  fs::create_directories(work);
  std::ofstream(work / "config.json") << kSweepConfig;
  std::ofstream(work / "space.json") << kSweepSpace;
  std::ofstream(work / "oom.json") << kOomSpace;
  const std::string common =
      tune.string() + " --config " + (work / "config.json").string() +
      " --nprocs 2 --strategy grid --metric tokens_per_s --steps 4 --start-step 2"
      " --no-probe --early-stop 0 --trial-timeout 120 --train-bin " +
      train.string() + " --db " + (work / "hybrid.db").string() + " --out " +
      (work / "best.json").string();
  const auto sweep =
      run_command(common + " --space " + (work / "space.json").string() + " --name grid");
  const auto oom = run_command(common + " --space " + (work / "oom.json").string() +
                               " --name no-prune --no-prune");
  if (sweep.status != 0) {
    out.error = "hybrid-tune failed (" + std::to_string(sweep.status) + "):\n" + sweep.output;
    return out;
  }
  if (oom.status != 3) {  // 3: no trial succeeded, the OOM we asked for
    out.error = "hybrid-tune --no-prune: expected status 3, got " + std::to_string(oom.status) +
                ":\n" + oom.output;
    return out;
  }
  profiler::test::exec_sql(work / "hybrid.db", "PRAGMA wal_checkpoint(TRUNCATE)");
  // The old database's WAL index must not outlive it.
  fs::remove(db.string() + "-wal", ec);
  fs::remove(db.string() + "-shm", ec);
  fs::rename(work / "hybrid.db", db, ec);
  if (ec) {
    out.error = "cannot move the sweep database into " + db.string() + ": " + ec.message();
    return out;
  }
  fs::remove_all(work, ec);
  out.path = db;
  return out;
}

// The shared database (built on first use in this process).
inline const SweepDb& real_sweep_db() {
  static std::once_flag once;
  static SweepDb db;
  std::call_once(once, [] { db = build_sweep_db(); });
  return db;
}

}  // namespace hybrid::gui::test
