// Kill storm on hybrid-train's checkpoints: a run saving a checkpoint after
// every step (a full one with model.bin every 3rd, keep_last 2) is SIGKILLed at
// seeded random moments and resumed from `latest` each time; every third kill
// lands inside a save by construction (hybrid-train --hold-mid-save holds the
// run there until it is killed). What each kill hit is read from the
// directory afterwards: a save in progress (a temporary file, or a tag not yet
// published) or the time between saves. After every
// kill, every tag that looks complete (has meta.json) loads with its checksums
// (hybrid-ckpt consolidate), `latest` among them, so the previous checkpoint
// survives a kill mid-save. At the end the resumed run's final state is
// bit-identical to an uninterrupted run's (partition bytes: master weights and
// optimizer moments), and no temporary file is left.
//
// HYBRID_KILL_STORM_KILLS (default 20) and HYBRID_KILL_STORM_SEED (default 14).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "../autotune/tune_test_util.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/save_policy.h"
#include "fault_test_util.h"

namespace hybrid::faults {
namespace {

namespace fs = std::filesystem;
using autotune::test::read_text;

constexpr int kSteps = 24;

std::string ckpt_bin() { return std::string(HYBRID_BINARY_DIR) + "/engine/hybrid-ckpt"; }

nlohmann::json storm_config() {
  // Big enough that a save (1.2 MiB of fp32 state, fsynced) takes a visible share of a step.
  return autotune::test::tiny_config(nlohmann::json::parse(R"({
    "hybrid": {"model": {"n_layer": 2, "n_embd": 64, "n_head": 2, "vocab_size": 256, "seq_len": 16},
               "checkpoint": {"interval": 3, "keep_last": 2}},
    "zero_optimization": {"stage": 1}})"));
}

std::string bytes_of(const fs::path& p) { return read_text(p.string()); }

int64_t step_of(const std::string& tag) { return std::stoll(tag.substr(4)); }  // "step000012"

// What the kill interrupted, judged from what it left.
std::string moment_left(const fs::path& dir) {
  std::string latest;
  if (std::ifstream in(dir / "latest"); in) std::getline(in, latest);
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos)
      return "mid-save: a file half written";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    const std::string tag = e.path().filename().string();
    if (!fs::exists(e.path() / "meta.json"))
      return !latest.empty() && tag < latest ? "mid-prune: a tag half deleted"
                                             : "mid-save: files written, not published";
    if (latest.empty() || step_of(tag) > step_of(latest))
      return "mid-save: meta.json written, latest not moved";
  }
  return "between saves";
}

// Every tag that looks complete loads whole; returns latest's tag ("" none).
std::string check_complete_tags_load(const fs::path& dir, const std::string& scratch) {
  std::string latest;
  if (std::ifstream in(dir / "latest"); in) std::getline(in, latest);
  if (!latest.empty()) {
    EXPECT_TRUE(fs::exists(dir / latest / "meta.json")) << "latest names an unpublished " << latest;
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory() || !fs::exists(e.path() / "meta.json")) continue;
    const std::string tag = e.path().filename().string();
    const auto r = autotune::test::run_command(fmt::format(
        "{} consolidate --dir {} --tag {} --out {}", ckpt_bin(), dir.string(), tag, scratch));
    EXPECT_EQ(r.exit_code, 0) << tag << " looks complete but does not load: " << r.output;
  }
  return latest;
}

TEST(KillStorm, CheckpointsSurviveKillsMidSaveAndResumeBitExactly) {
  const int kills = env_int("HYBRID_KILL_STORM_KILLS", 20);
  std::mt19937 rng(unsigned(env_int("HYBRID_KILL_STORM_SEED", 14)));
  autotune::test::TempDir dir;
  const std::string cfg = dir / "cfg.json";
  autotune::test::write_json(cfg, storm_config());
  const std::string train = autotune::test::train_bin();

  // The uninterrupted run, then how long a start takes (one step, no save),
  // measured second so that whatever the first run caches (GEMM choices) is warm.
  auto t0 = std::chrono::steady_clock::now();
  const auto ref = autotune::test::run_command(
      fmt::format("{} --config {} --steps {} --save {} --save-every 1 --quiet", train, cfg, kSteps,
                  dir / "ref"));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  const auto one =
      autotune::test::run_command(fmt::format("{} --config {} --steps 1 --quiet", train, cfg));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const double start_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::map<std::string, int> hit;
  int done = 0, epochs = 0;
  while (done < kills) {
    const fs::path ck = dir / fmt::format("storm{}", epochs++);
    std::string latest;
    while (done < kills) {
      const int64_t at = latest.empty() ? 0 : step_of(latest);
      if (at >= kSteps) break;
      const std::string cmd =
          fmt::format("{} --config {} --steps {} --save {} --save-every 1 --quiet{}", train, cfg,
                      kSteps - at, ck.string(), latest.empty() ? "" : " --load " + ck.string());
      // Every third kill is aimed inside a save: the run holds still in a random
      // step's checkpoint, files written and nothing published, until killed.
      const bool aimed = done % 3 == 2;
      const int64_t hold_at = at + 1 + int64_t(rng() % uint64_t(kSteps - at));  // global step
      const size_t log_size = read_text(dir / "storm.log").size();
      Child run(aimed ? fmt::format("{} --hold-mid-save {}", cmd, hold_at) : cmd,
                dir / "storm.log");
      if (aimed) {
        wait_until([&] {
          return read_text(dir / "storm.log").find("test-hold: mid-save", log_size) !=
                     std::string::npos ||
                 !run.running();
        });
      } else {
        // Mostly among the steps and saves: from 90 % of the start time to the run's end.
        const double per_step = std::max(0.0, run_s - start_s) / kSteps;
        std::uniform_real_distribution<double> when(0.9 * start_s,
                                                    start_s + per_step * double(kSteps - at));
        std::this_thread::sleep_for(std::chrono::duration<double>(when(rng)));
      }
      if (!run.running()) {
        ASSERT_FALSE(aimed) << "the run ended instead of holding in step " << hold_at << "'s save\n"
                            << read_text(dir / "storm.log");
        ASSERT_EQ(WEXITSTATUS(run.wait()), 0) << read_text(dir / "storm.log");
        latest = check_complete_tags_load(ck, dir / "scratch.bin");
        continue;
      }
      run.kill(rng() % 2 == 0);
      run.wait();
      ++done;
      if (!fs::exists(ck)) {
        ++hit["before the first save"];
        continue;
      }
      if (aimed) {  // the held tag's files are there, meta.json is not
        const fs::path held = ck / engine::SavePolicy::tag(hold_at);
        EXPECT_TRUE(fs::exists(held / engine::partition_file_name(0))) << held;
        EXPECT_FALSE(fs::exists(held / "meta.json")) << held;
        ++hit["mid-save: held with its files written, not published"];
      } else {
        ++hit[moment_left(ck)];
      }
      latest = check_complete_tags_load(ck, dir / "scratch.bin");
      if (HasFailure()) {
        ADD_FAILURE() << "after kill " << done << "\n" << read_text(dir / "storm.log");
        return;
      }
    }
    // Finish the run and compare its final state with the reference.
    const int64_t at = latest.empty() ? 0 : step_of(latest);
    if (at < kSteps) {
      const auto r = autotune::test::run_command(
          fmt::format("{} --config {} --steps {} --save {} --save-every 1 --quiet{}", train, cfg,
                      kSteps - at, ck.string(), latest.empty() ? "" : " --load " + ck.string()));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    const std::string last = engine::SavePolicy::tag(kSteps);
    EXPECT_EQ(check_complete_tags_load(ck, dir / "scratch.bin"), last);
    const std::string part = engine::partition_file_name(0);
    EXPECT_TRUE(bytes_of(ck / last / part) == bytes_of(fs::path(dir / "ref") / last / part))
        << "the resumed run's final state differs from the uninterrupted run's";
    for (const auto& e : fs::recursive_directory_iterator(ck)) {
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos)
          << "leftover " << e.path();
      // An unpublished tag may stay only older than latest: a deletion the last
      // kill cut short, which the next save's keep-last finishes.
      const std::string tag = e.path().filename().string();
      if (e.is_directory() && !fs::exists(e.path() / "meta.json")) {
        EXPECT_LT(tag, last) << "leftover unpublished tag " << e.path();
      }
    }
  }
  std::string summary;
  for (const auto& [what, n] : hit) summary += fmt::format(", {} {}", n, what);
  std::printf("checkpoint kill storm: %d kills over %d run(s) of %d steps (%.2f s each)%s\n", done,
              epochs, kSteps, run_s, summary.c_str());
  int mid_save = 0;
  for (const auto& [what, n] : hit) mid_save += what.rfind("mid-save", 0) == 0 ? n : 0;
  EXPECT_GE(mid_save, kills / 3) << "every third kill was held inside a save";
}

}  // namespace
}  // namespace hybrid::faults
