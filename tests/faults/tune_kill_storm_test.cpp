// Kill storm on hybrid-tune: real sweeps (hybrid-train trials, one SQLite file)
// SIGKILLed at seeded random moments of three kinds — during a trial, between
// two trials, while best.json is being written — the tuner alone or its whole
// process group, and resumed by the same command each time. After every kill:
// `PRAGMA integrity_check` is ok, at most the trial in flight is `running`, and
// trials interrupted earlier are `pending` with the reason (classified, never
// left running). At the end of each sweep: no trial lost (all finished), none
// that had finished run again (its row untouched, no new start), the killed one
// run exactly once more per kill, no run left `running`, and best.json is the
// choice a fresh ranking of the stored measurements makes (best_trial, as an
// uninterrupted sweep ends) — the written file, not a stale or partial one.
//
// HYBRID_KILL_STORM_KILLS (default 12: three sweeps, every moment hit in each,
// the third on 2 ranks) and HYBRID_KILL_STORM_SEED (default 14) set the storm;
// scripts/kill-storm.sh runs longer ones. Moments too short to hit from outside
// are held open by HYBRID_TUNE_TEST_PAUSE_S (autotune/test_pause.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "../autotune/tune_test_util.h"
#include "autotune/best_config.h"
#include "autotune/report.h"
#include "fault_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid::faults {
namespace {

namespace fs = std::filesystem;
using autotune::test::read_text;
using profiler::TrialRow;
using profiler::TrialStatus;

constexpr int kTrials = 6;  // mbs 1,2,4 x stage 0,1

enum class Moment { trial, between, best };
const char* moment_name(Moment m) {
  return m == Moment::trial ? "during a trial" : m == Moment::between ? "between trials" : "best";
}

size_t count_lines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line == needle;
  return n;
}

std::map<std::string, int> starts_by_key(const std::string& log) {
  std::map<std::string, int> m;
  std::istringstream in(read_text(log));
  for (std::string line; std::getline(in, line);) ++m[line];
  return m;
}

// One sweep of the storm: its command, files and what the kills did to it.
struct StormSweep {
  std::string name, command, db, out, starts_log;
  int nprocs = 1;
  std::map<std::string, int> killed_in_flight;  // key -> kills while it ran
  std::map<std::string, TrialRow> finished;     // as first seen finished
};

std::vector<TrialRow> trials_of(const std::string& db, const std::string& name) {
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  for (const auto& s : store.sweeps())
    if (s.name == name) return store.trials(s.id);
  return {};
}

// What a kill hit, judged afterwards from what the invocation printed and what
// its launcher started.
struct KillResult {
  Moment moment = Moment::between;
  std::string in_flight;  // the trial the launcher had started and no progress line closed
  bool in_pause = false;  // inside a test pause (between trials or in best.json)
};

// The state a kill left: checked, and the finished trials remembered.
void check_after_kill(StormSweep& sw, const KillResult& k,
                      const std::set<std::string>& pending_ok) {
  profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
  ASSERT_EQ(store.integrity_check(), "ok");
  std::string running_key;
  for (const auto& t : trials_of(sw.db, sw.name)) {
    if (t.status == TrialStatus::running) {
      EXPECT_TRUE(running_key.empty()) << "two trials running: " << running_key << ", " << t.key;
      running_key = t.key;
    } else if (t.status == TrialStatus::pending) {
      EXPECT_TRUE(pending_ok.count(t.key)) << t.key << " pending but never killed";
      EXPECT_EQ(t.reason.rfind("interrupted", 0), 0u) << t.key << ": " << t.reason;
    } else if (!sw.finished.count(t.key)) {
      sw.finished[t.key] = t;
    }
  }
  if (!k.in_flight.empty()) {
    EXPECT_EQ(running_key, k.in_flight) << "the trial in flight is not the one `running`";
    ++sw.killed_in_flight[k.in_flight];
  } else if (k.in_pause) {
    // Earlier kills' trials are `pending` by now, not `running`.
    EXPECT_TRUE(running_key.empty())
        << "killed " << moment_name(k.moment) << ", yet " << running_key << " claims to run";
  }
  if (fs::exists(sw.out)) {  // never half written: the old or the new best config
    EXPECT_NO_THROW(autotune::test::read_json(sw.out)) << read_text(sw.out);
  }
}

KillResult judge_kill(const std::string& output, const std::map<std::string, int>& starts_before,
                      const std::map<std::string, int>& starts_after) {
  static const std::regex progress(R"(^\[ *\d+/\d+\] (\S+) \|)");
  std::map<std::string, int> closed;
  std::istringstream in(output);
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, progress)) ++closed[m[1].str()];
  KillResult k;
  for (const auto& [key, n] : starts_after) {
    const int before = starts_before.count(key) ? starts_before.at(key) : 0;
    if (n - before > (closed.count(key) ? closed.at(key) : 0)) k.in_flight = key;
  }
  const size_t last = output.rfind("test-pause: ");
  const size_t eol = output.find('\n', last);
  const std::string pause = last == std::string::npos
                                ? ""
                                : output.substr(last, eol == std::string::npos ? eol : eol - last);
  k.in_pause = k.in_flight.empty() && !pause.empty() && pause.find(" over") == std::string::npos;
  if (!k.in_flight.empty())
    k.moment = Moment::trial;
  else if (pause.rfind("test-pause: best-config", 0) == 0)
    k.moment = Moment::best;
  else if (pause.empty() || k.in_pause)
    k.moment = Moment::between;  // starting up, or in the pause
  else
    k.moment = Moment::trial;  // past the pause: the trial's row written, its launcher starting
  return k;
}

// Starts the sweep and kills it near moment `aim`; returns what it hit, or
// nullopt when the sweep finished first (nothing was killed).
std::optional<KillResult> kill_once(StormSweep& sw, Moment aim, std::mt19937& rng, bool group,
                                    const std::string& log) {
  const size_t log_size = read_text(log).size();
  auto since_start = [&] { return read_text(log).substr(log_size); };
  const auto starts_before = starts_by_key(sw.starts_log);
  size_t total_before = 0;
  for (const auto& [k, n] : starts_before) total_before += size_t(n);
  auto total_starts = [&] {
    size_t n = 0;
    for (const auto& [k, c] : starts_by_key(sw.starts_log)) n += size_t(c);
    return n;
  };
  std::uniform_real_distribution<double> frac(0.0, 1.0);
  Child tuner(sw.command, log);
  if (tuner.pid() <= 0) throw std::runtime_error("cannot start " + sw.command);
  if (aim == Moment::trial) {
    // A launcher start; then somewhere in its 0.3 s pause or the training after it.
    wait_until([&] { return total_starts() > total_before || !tuner.running(); });
    std::this_thread::sleep_for(std::chrono::duration<double>(0.45 * frac(rng)));
  } else {
    const std::string line =
        aim == Moment::between ? "test-pause: between-trials" : "test-pause: best-config";
    const size_t want = aim == Moment::between ? 1 + rng() % 3 : 1;
    wait_until([&] { return count_lines(since_start(), line) >= want || !tuner.running(); });
    std::this_thread::sleep_for(std::chrono::duration<double>(0.5 * kStormPauseS * frac(rng)));
  }
  if (!tuner.running()) {
    tuner.wait();
    return std::nullopt;
  }
  tuner.kill(group);
  const int status = tuner.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << read_text(log);
  // A launcher started just before the kill may still write its start line:
  // the starts are read once every process the tuner started is gone.
  EXPECT_TRUE(reap_every_child()) << "the killed tuner's processes outlived it by 30 s";
  return judge_kill(since_start(), starts_before, starts_by_key(sw.starts_log));
}

// Every check that the finished sweep must pass.
void check_finished(const StormSweep& sw, const std::string& log) {
  const auto trials = trials_of(sw.db, sw.name);
  ASSERT_EQ(trials.size(), size_t(kTrials)) << "trials lost";
  const auto starts = starts_by_key(sw.starts_log);
  for (const auto& t : trials) {
    EXPECT_EQ(t.status, TrialStatus::ok) << t.key << ": " << t.reason;
    const int kills = sw.killed_in_flight.count(t.key) ? sw.killed_in_flight.at(t.key) : 0;
    EXPECT_EQ(starts.count(t.key) ? starts.at(t.key) : 0, 1 + kills)
        << t.key << ": started once, plus once per kill while it ran";
    if (sw.finished.count(t.key)) {
      EXPECT_EQ(t, sw.finished.at(t.key)) << t.key << " had finished and was touched again";
    }
  }
  profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  for (const auto& run : store.list_runs())
    EXPECT_NE(run.status, profiler::RunStatus::running) << "run " << run.id << " left running";
  const auto best = autotune::best_trial(autotune::Metric::throughput, trials);
  ASSERT_TRUE(best);
  EXPECT_EQ(autotune::test::read_json(sw.out),
            autotune::best_config_json(nlohmann::json::parse(best->config_json), sw.nprocs))
      << "best.json is not the stored measurements' choice " << best->key << "\n"
      << read_text(log);
  for (const auto& entry : fs::directory_iterator(fs::path(sw.out).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("best.json.tmp"), std::string::npos)
        << "leftover " << entry.path();
}

TEST(KillStorm, TuneResumesAfterEveryKillWithNothingRerunOrLost) {
  autotune::test::TempDir dir;
  Storm storm = set_up_storm(dir, 12, R"({"mbs": [1, 2, 4], "stage": [0, 1]})");
  const int kills = storm.kills;
  std::mt19937& rng = storm.rng;
  ASSERT_TRUE(storm.reaper);  // a killed tuner's launchers are reaped here
  const std::string db = dir / "tune.db";

  // Re-measurements and confirmation runs are off: they start a trial's key again
  // on purpose, and this storm counts starts per key.
  // Sweeps of 4 kills each (2 during trials, 1 between, 1 in the best config,
  // in a random order but the best-config one last); every 3rd sweep has 2 ranks.
  std::map<Moment, int> hit;
  int done = 0, sweeps = 0;
  while (done < kills) {
    StormSweep sw;
    sw.nprocs = sweeps % 3 == 2 ? 2 : 1;
    sw.name = fmt::format("storm{}", sweeps);
    sw.db = db;
    sw.out = dir / (sw.name + "/best.json");
    sw.starts_log = dir / (sw.name + ".starts");
    sw.command = fmt::format(
        "{} --config {} --space {} --strategy grid --early-stop 0 --steps 3 --start-step 2 "
        "--no-probe --db {} --out {} --name {} --nprocs {} --remeasure 0 --confirm-rounds 0 "
        "--launcher 'bash {}/log_launcher.sh {} {{key}} {}{{cmd}}'",
        autotune::test::tune_bin(), dir / "cfg.json", dir / "space.json", db, sw.out, sw.name,
        sw.nprocs, autotune::test::data_dir(), sw.starts_log,
        sw.nprocs > 1 ? fmt::format("{} -np {} ", HYBRID_MPIEXEC, sw.nprocs) : "");
    const std::string log = dir / (sw.name + ".log");
    std::vector<Moment> plan = {Moment::trial, Moment::trial, Moment::between};
    std::shuffle(plan.begin(), plan.end(), rng);
    plan.push_back(Moment::best);
    std::set<std::string> interrupted;
    for (size_t i = 0; i < plan.size() && done < kills; ++i) {
      const bool group = rng() % 2 == 0;
      const auto k = kill_once(sw, plan[i], rng, group, log);
      if (!k) continue;  // the sweep finished first
      ++hit[k->moment];
      ++done;
      check_after_kill(sw, *k, interrupted);
      for (const auto& [k, n] : sw.killed_in_flight) interrupted.insert(k);
      if (HasFatalFailure() || HasFailure()) {
        ADD_FAILURE() << "kill " << done << " (" << moment_name(k->moment) << ", "
                      << (group ? "group" : "tuner") << ") of " << sw.name << "\n"
                      << read_text(log);
        return;
      }
    }
    const auto r = autotune::test::run_command(sw.command + " >> " + log);
    ASSERT_EQ(r.exit_code, 0) << read_text(log);
    check_finished(sw, log);
    if (HasFailure()) return;
    ++sweeps;
  }
  std::printf(
      "kill storm: %d kills (%d during a trial, %d between trials, %d in best.json) over "
      "%d sweeps, seed %u: %d/%d resumes correct\n",
      done, hit[Moment::trial], hit[Moment::between], hit[Moment::best], sweeps, storm.seed, done,
      done);
  EXPECT_GT(hit[Moment::trial], 0);
  EXPECT_GT(hit[Moment::between], 0);
  EXPECT_GT(hit[Moment::best], 0);
}

}  // namespace
}  // namespace hybrid::faults
