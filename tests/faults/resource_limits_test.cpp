// Resource limits, on the real tools: a memory budget or an address-space limit
// (ulimit -v) exceeded, a disk that fills while a checkpoint or the run store is
// written (a size-limited tmpfs), and a run store on a read-only filesystem.
// Each ends with a named error and corrupts nothing: the previous checkpoint
// loads, the store passes `PRAGMA integrity_check`, and no partial rows are
// kept. The filesystems are mounted in a private mount namespace (gone with
// the test); without the privilege to mount, those tests skip and say why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../autotune/tune_test_util.h"
#include "fault_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid::faults {
namespace {

namespace fs = std::filesystem;
using autotune::test::read_json;
using autotune::test::read_text;
using autotune::test::run_command;
using autotune::test::TempDir;
using autotune::test::tiny_config;
using autotune::test::train_bin;
using autotune::test::write_json;

std::string ckpt_bin() { return std::string(HYBRID_BINARY_DIR) + "/engine/hybrid-ckpt"; }
std::string prof_bin() { return std::string(HYBRID_BINARY_DIR) + "/profiler/hybrid-prof"; }

// A tmpfs of `bytes` at dir/name in a private mount namespace; "" or why not.
std::string private_tmpfs(const TempDir& dir, const std::string& name, size_t bytes) {
  if (auto why = enter_private_mounts(); !why.empty()) return why;
  fs::create_directories(dir / name);
  return mount_tmpfs(dir / name, bytes);
}

// Fills the filesystem holding `dir` until the write fails (ENOSPC), leaving
// `keep` bytes free at most.
void fill_disk(const std::string& dir, size_t keep = 0) {
  std::ofstream out(dir + "/filler", std::ios::binary);
  const std::string block(keep > 0 ? keep : 4096, '\0');
  while (out.write(block.data(), std::streamsize(block.size())) && out.flush()) {
  }
}

TEST(ResourceLimits, AMemoryBudgetExceededIsANamedOutOfMemoryError) {
  TempDir dir;
  write_json(dir / "cfg.json", tiny_config({{"hybrid", {{"memory_budget", "64KiB"}}}}));
  const auto r = run_command(fmt::format("{} --config {} --steps 2 --result {} --quiet",
                                         train_bin(), dir / "cfg.json", dir / "r.json"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto res = read_json(dir / "r.json");
  EXPECT_EQ(res["status"], "oom");
  EXPECT_EQ(res["error"]["kind"], "OutOfMemoryError");
  EXPECT_NE(res["error"]["message"].get<std::string>().find("over its memory budget of 64.00 KiB"),
            std::string::npos)
      << res.dump(2);
}

// ulimit -v: whichever allocation fails first (an engine buffer, or a host
// vector that throws std::bad_alloc), the run is an out-of-memory error that
// says so — never a bare "std::bad_alloc" failure.
TEST(ResourceLimits, AnAddressSpaceLimitIsANamedOutOfMemoryError) {
#if defined(__SANITIZE_ADDRESS__)
  // Not a slowness: AddressSanitizer maps terabytes of shadow memory when a process
  // starts, so no instrumented hybrid-train can start under `ulimit -v` at all.
  GTEST_SKIP() << "AddressSanitizer build: its shadow memory cannot start under ulimit -v";
#endif
  TempDir dir;
  // ~60 M parameters: about 1 GiB of fp32 weights, gradients and AdamW moments.
  write_json(dir / "cfg.json", tiny_config({{"hybrid",
                                             {{"model",
                                               {{"n_layer", 4},
                                                {"n_embd", 1024},
                                                {"n_head", 8},
                                                {"vocab_size", 8192},
                                                {"seq_len", 64}}}}}}));
  int ooms = 0;
  // 1.2 GB: an engine buffer is refused first; 2.0 GB: a host vector (std::bad_alloc).
  for (int mib : {1200, 2000}) {
    const std::string res = dir / fmt::format("r{}.json", mib);
    const auto r =
        run_command(fmt::format("bash -c 'ulimit -v {}; exec {} --config {} --steps 1 "
                                "--result {} --quiet'",
                                mib * 1024, train_bin(), dir / "cfg.json", res));
    if (r.exit_code == 0 || r.exit_code == 127) continue;  // enough memory / libraries not mapped
    ++ooms;
    EXPECT_EQ(r.exit_code, 3) << mib << " MiB: " << r.output;
    const auto j = read_json(res);
    EXPECT_EQ(j["status"], "oom") << mib << " MiB: " << j.dump(2);
    EXPECT_EQ(j["error"]["kind"], "OutOfMemoryError");
    EXPECT_EQ(j["error"]["message"].get<std::string>().rfind("out of memory: ", 0), 0u) << j.dump();
  }
  EXPECT_GT(ooms, 0) << "no limit made the run fail: the test tested nothing";
}

TEST(ResourceLimits, ADiskFullMidCheckpointKeepsThePreviousOneLoadable) {
  TempDir dir;
  // One checkpoint of the tiny model takes 353 KiB: the second does not fit in 600 KiB.
  if (auto why = private_tmpfs(dir, "disk", 600 * 1024); !why.empty()) GTEST_SKIP() << why;
  write_json(dir / "cfg.json", tiny_config());
  const std::string ck = dir / "disk/ck";
  const auto r =
      run_command(fmt::format("{} --config {} --steps 4 --save {} --save-every 2 --result {} "
                              "--quiet",
                              train_bin(), dir / "cfg.json", ck, dir / "r.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto res = read_json(dir / "r.json");
  EXPECT_EQ(res["status"], "failed");
  const std::string msg = res["error"]["message"];
  EXPECT_NE(msg.find("checkpoint " + ck + "/step000004"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
  EXPECT_EQ(read_text(ck + "/latest"), "step000002\n");
  EXPECT_FALSE(fs::exists(ck + "/step000004/meta.json"));
  for (const auto& e : fs::recursive_directory_iterator(ck))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
  const auto load = run_command(
      fmt::format("{} consolidate --dir {} --out {}", ckpt_bin(), ck, dir / "model.bin"));
  EXPECT_EQ(load.exit_code, 0) << "the previous checkpoint does not load: " << load.output;
  // And training resumes from it once there is room.
  fs::remove_all(ck + "/step000004");
  const auto resumed = run_command(
      fmt::format("{} --config {} --steps 1 --load {} --quiet", train_bin(), dir / "cfg.json", ck));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
}

TEST(ResourceLimits, AFullDiskUnderTheStoreIsANamedErrorAndCorruptsNothing) {
  TempDir dir;
  if (auto why = private_tmpfs(dir, "disk", 1024 * 1024); !why.empty()) GTEST_SKIP() << why;
  write_json(dir / "cfg.json", tiny_config());
  const std::string db = dir / "disk/hybrid.db";
  const auto first = run_command(
      fmt::format("{} --config {} --steps 3 --db {} --quiet", train_bin(), dir / "cfg.json", db));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  fill_disk(dir / "disk");
  const auto r = run_command(fmt::format("{} --config {} --steps 50 --db {} --result {} --quiet",
                                         train_bin(), dir / "cfg.json", db, dir / "r.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string msg = read_json(dir / "r.json")["error"]["message"];
  EXPECT_NE(msg.find("database " + db), std::string::npos) << msg;
  EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
  const auto tune = run_command(fmt::format("{} --config {} --db {} --no-probe --max-trials 1",
                                            autotune::test::tune_bin(), dir / "cfg.json", db));
  EXPECT_EQ(tune.exit_code, 1);
  EXPECT_NE(tune.output.find("No space left on device"), std::string::npos) << tune.output;
  // Room again: the store is whole, the first run intact, nothing of the failed ones kept.
  fs::remove(dir / "disk/filler");
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto runs = store.list_runs();
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.front().status, profiler::RunStatus::ok);
  EXPECT_EQ(store.steps(runs.front().id).size(), 3u);
  for (size_t i = 1; i < runs.size(); ++i) EXPECT_LE(store.steps(runs[i].id).size(), 50u);
  EXPECT_TRUE(store.sweeps().empty()) << "the failed sweep left rows";
}

TEST(ResourceLimits, AStoreOnAReadOnlyFilesystemIsRefusedByWritersAndReadByReaders) {
  TempDir dir;
  if (auto why = private_tmpfs(dir, "ro", 4 * 1024 * 1024); !why.empty()) GTEST_SKIP() << why;
  write_json(dir / "cfg.json", tiny_config());
  const std::string db = dir / "ro/hybrid.db";
  const auto first = run_command(
      fmt::format("{} --config {} --steps 3 --db {} --quiet", train_bin(), dir / "cfg.json", db));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  if (auto why = remount_read_only(dir / "ro"); !why.empty()) GTEST_SKIP() << why;
  const std::string named = "database " + db +
                            " cannot be written: its filesystem is mounted "
                            "read-only";
  const auto train = run_command(fmt::format("{} --config {} --steps 2 --db {} --result {} --quiet",
                                             train_bin(), dir / "cfg.json", db, dir / "r.json"));
  EXPECT_EQ(train.exit_code, 1);
  EXPECT_NE(train.output.find(named), std::string::npos) << train.output;
  const auto tune = run_command(fmt::format("{} --config {} --db {} --no-probe --max-trials 1",
                                            autotune::test::tune_bin(), dir / "cfg.json", db));
  EXPECT_EQ(tune.exit_code, 1);
  EXPECT_NE(tune.output.find(named), std::string::npos) << tune.output;
  // Readers still read it.
  const auto report = run_command(fmt::format("{} report steps --db {} --run 1", prof_bin(), db));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("3 steps"), std::string::npos) << report.output;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  EXPECT_EQ(store.list_runs().size(), 1u);
}

}  // namespace
}  // namespace hybrid::faults
