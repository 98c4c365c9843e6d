// Kill storm on hybrid-tune's confirmation run (autotune/tie_break.h): three
// candidates tied within noise are run again in interleaved rounds, and the
// tuner is SIGKILLed (alone or with its process group) during those rounds and
// while best.json is written after them, then resumed by the same command.
//
// The trials' step times are scripted (tests/autotune/data/series_launcher.sh,
// behind log_launcher.sh, which logs every start and holds it 0.3 s so a kill can
// land inside one), so the resumed sweep works on the very measurements an
// uninterrupted sweep of the same spec sees, and must end exactly as it did.
// After every kill: `PRAGMA integrity_check` ok, the first-pass trials untouched,
// at most one stored confirmation. At the end of each sweep: no first-pass trial
// rerun or lost (each started once, rows unchanged), each invocation's
// confirmation starts a prefix of the interleaved order, one complete
// confirmation in all (redone once after a kill inside it, never after it was
// stored), one tie-break row equal to the uninterrupted sweep's, and best.json
// identical to the uninterrupted sweep's.
//
// HYBRID_KILL_STORM_KILLS (default 6: two sweeps, each with kills during the
// confirmation and after it was stored) and HYBRID_KILL_STORM_SEED (default
// 14); scripts/kill-storm.sh runs longer storms.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <sstream>

#include "../autotune/tune_test_util.h"
#include "fault_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid::faults {
namespace {

namespace fs = std::filesystem;
using autotune::test::read_text;
using profiler::TieBreak;
using profiler::TrialRow;
using profiler::TrialStatus;

constexpr int kRounds = 3;  // --confirm-rounds
const std::vector<std::string> kKeys = {"mbs=1,gas=1,stage=0", "mbs=2,gas=1,stage=0",
                                        "mbs=4,gas=1,stage=0"};

// 13 steps around `ms`, +-`jitter` in a fixed pattern (as the noise tests script them).
std::string series(double ms, double jitter) {
  std::string s;
  for (int i = 0; i < 13; ++i) s += fmt::format(" {}", ms + jitter * double((i * 7) % 5 - 2) / 2);
  return s;
}

// First pass: 10.0, 10.1, 10.2 ms with overlapping intervals (a three-way tie).
// Confirmation: mbs=2 clearly fastest, so it wins, decided.
std::string scripted_spec() {
  return "first " + kKeys[0] + series(10.0, 0.8) + "\nfirst " + kKeys[1] + series(10.2, 0.8) +
         "\nfirst " + kKeys[2] + series(10.1, 0.8) + "\nconfirm " + kKeys[0] + series(10.9, 0.2) +
         "\nconfirm " + kKeys[1] + series(10.0, 0.2) + "\nconfirm " + kKeys[2] + series(10.6, 0.2) +
         "\n";
}

// A trial start as log_launcher.sh recorded it ("{key}@{dir}"): its key and its
// confirmation round (0: a first-pass trial).
struct Start {
  std::string key;
  int round = 0;
  friend bool operator==(const Start&, const Start&) = default;
};
void PrintTo(const Start& s, std::ostream* os) { *os << s.key << " round " << s.round; }

std::vector<Start> read_starts(const std::string& log) {
  static const std::regex confirm_dir(R"(/confirm-(\d+)$)");
  std::vector<Start> v;
  std::istringstream in(read_text(log));
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find('@');
    if (at == std::string::npos) continue;
    const std::string dir = line.substr(at + 1);
    Start s{line.substr(0, at), 0};
    if (std::regex_search(dir, m, confirm_dir)) s.round = std::stoi(m[1].str());
    v.push_back(s);
  }
  return v;
}

struct Sweep {
  std::string name, command, db, out, starts_log, log;
};

Sweep make_sweep(const autotune::test::TempDir& dir, const std::string& name) {
  Sweep sw;
  sw.name = name;
  sw.db = dir / "tune.db";
  sw.out = dir / (name + "/best.json");
  sw.starts_log = dir / (name + ".starts");
  sw.log = dir / (name + ".log");
  const std::string data = autotune::test::data_dir();
  sw.command = fmt::format(
      "{} --config {} --space {} --metric latency --strategy grid --early-stop 0 --steps 13 "
      "--start-step 1 --no-probe --db {} --out {} --name {} --remeasure 0 --confirm-rounds {} "
      "--launcher 'bash {}/log_launcher.sh {} {{key}}@{{dir}} bash {}/series_launcher.sh {} "
      "{{key}} {{dir}} {{cmd}}'",
      autotune::test::tune_bin(), dir / "cfg.json", dir / "space.json", sw.db, sw.out, name,
      kRounds, data, sw.starts_log, data, dir / "spec.txt");
  return sw;
}

int64_t sweep_id(const Sweep& sw) {
  profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
  for (const auto& s : store.sweeps())
    if (s.name == sw.name) return s.id;
  return 0;
}

std::vector<TrialRow> trials_of(const Sweep& sw) {
  profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
  return store.trials(sweep_id(sw));
}

std::vector<TieBreak> tie_breaks_of(const Sweep& sw) {
  profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
  return store.tie_breaks(sweep_id(sw));
}

// The confirmation's trials in the order run_confirmation starts them: round r
// runs the tied candidates once each, their order rotated by r.
std::vector<Start> interleaved_order(const std::vector<std::string>& tied) {
  std::vector<Start> v;
  for (int r = 0; r < kRounds; ++r)
    for (size_t k = 0; k < tied.size(); ++k)
      v.push_back({tied[(k + size_t(r)) % tied.size()], r + 1});
  return v;
}

std::vector<std::string> tied_keys(const TieBreak& tb) {
  std::vector<std::string> keys;
  for (const auto& c : nlohmann::json::parse(tb.candidates_json)) keys.push_back(c["key"]);
  return keys;
}

// What the tie break says, without the store's bookkeeping.
TieBreak decision_of(TieBreak tb) {
  tb.id = tb.sweep_id = 0;
  tb.created_at = 0;
  return tb;
}

bool is_prefix(const std::vector<Start>& part, const std::vector<Start>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

enum class Aim { confirmation, best_json };

// One invocation killed at `aim`: inside the confirmation, after `nth` of its
// trial starts and a random part of that trial's 0.3 s hold; or in best.json's
// write. false when the invocation finished before the kill.
bool kill_once(const Sweep& sw, Aim aim, std::mt19937& rng, bool group) {
  const size_t log_size = read_text(sw.log).size();
  const size_t starts_before = read_starts(sw.starts_log).size();
  auto confirm_starts = [&] {
    const auto s = read_starts(sw.starts_log);
    return size_t(std::count_if(s.begin() + long(starts_before), s.end(),
                                [](const Start& x) { return x.round > 0; }));
  };
  std::uniform_real_distribution<double> frac(0.0, 1.0);
  Child tuner(sw.command, sw.log);
  if (tuner.pid() <= 0) throw std::runtime_error("cannot start " + sw.command);
  if (aim == Aim::confirmation) {
    const size_t nth = 1 + rng() % (kKeys.size() * kRounds);
    wait_until([&] { return confirm_starts() >= nth || !tuner.running(); });
    std::this_thread::sleep_for(std::chrono::duration<double>(0.4 * frac(rng)));
  } else {
    wait_until([&] {
      return read_text(sw.log).find("test-pause: best-config", log_size) != std::string::npos ||
             !tuner.running();
    });
    std::this_thread::sleep_for(std::chrono::duration<double>(0.5 * kStormPauseS * frac(rng)));
  }
  if (!tuner.running()) {
    tuner.wait();
    return false;
  }
  tuner.kill(group);
  const int status = tuner.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << read_text(sw.log);
  // A launcher started just before the kill may still write its start line:
  // the starts are read once every process the tuner started is gone.
  EXPECT_TRUE(reap_every_child()) << "the killed tuner's processes outlived it by 30 s";
  return true;
}

// The starts of one invocation: first-pass ones, then a prefix of the interleaved
// confirmation (whole when the invocation finished it); returns the confirmation's.
std::vector<Start> check_invocation_starts(const std::vector<Start>& starts,
                                           const std::vector<Start>& order,
                                           const std::string& what) {
  std::vector<Start> confirm;
  for (const auto& s : starts) {
    if (s.round > 0)
      confirm.push_back(s);
    else
      EXPECT_TRUE(confirm.empty()) << what << ": first-pass trial " << s.key << " started after "
                                   << "the confirmation began";
  }
  EXPECT_TRUE(is_prefix(confirm, order)) << what << ": confirmation trials out of order";
  return confirm;
}

TEST(KillStorm, TuneConfirmationRunSurvivesKillsAndEndsAsAnUninterruptedOne) {
  autotune::test::TempDir dir;
  Storm storm = set_up_storm(dir, 6, R"({"mbs": [1, 2, 4], "stage": [0]})");
  const int kills = storm.kills;
  std::mt19937& rng = storm.rng;
  ASSERT_TRUE(storm.reaper);  // a killed tuner's launchers are reaped here
  std::ofstream(dir / "spec.txt") << scripted_spec();

  // The uninterrupted sweep on the same measurements: what every storm sweep must end with.
  const Sweep ref = make_sweep(dir, "reference");
  const auto r = autotune::test::run_command(ref.command + " >> " + ref.log + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << read_text(ref.log);
  const auto ref_tbs = tie_breaks_of(ref);
  ASSERT_EQ(ref_tbs.size(), 1u) << read_text(ref.log);
  ASSERT_EQ(ref_tbs[0].winner_key, kKeys[1]) << read_text(ref.log);
  ASSERT_TRUE(ref_tbs[0].decided);
  const std::vector<Start> order = interleaved_order(tied_keys(ref_tbs[0]));
  ASSERT_EQ(order.size(), kKeys.size() * kRounds);
  EXPECT_EQ(check_invocation_starts(read_starts(ref.starts_log), order, "uninterrupted"), order);
  const nlohmann::json ref_best = autotune::test::read_json(ref.out);

  std::map<std::string, int> hit;  // by moment
  int done = 0, sweeps = 0, redone = 0;
  while (done < kills) {
    const Sweep sw = make_sweep(dir, fmt::format("storm{}", sweeps));
    // Two kills aimed inside the confirmation, then one in best.json's write.
    std::map<std::string, TrialRow> finished;  // first-pass rows as first seen
    size_t seen = 0;                           // starts before this invocation
    bool interrupted_confirmation = false;
    bool stored = false;  // the confirmation's decision in the store
    for (const Aim aim : {Aim::confirmation, Aim::confirmation, Aim::best_json}) {
      if (done >= kills) break;
      const bool group = rng() % 2 == 0;
      if (!kill_once(sw, aim, rng, group)) continue;  // it finished first
      ++done;
      const auto starts = read_starts(sw.starts_log);
      const std::vector<Start> mine(starts.begin() + long(seen), starts.end());
      seen = starts.size();
      const auto confirm = check_invocation_starts(mine, order, fmt::format("kill {}", done));
      // Once stored, the confirmation is never run again.
      if (stored) {
        EXPECT_TRUE(confirm.empty()) << "kill " << done << ": confirmation rerun";
      }
      profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
      ASSERT_EQ(store.integrity_check(), "ok");
      const auto tbs = tie_breaks_of(sw);
      stored = !tbs.empty();
      ASSERT_LE(tbs.size(), 1u) << "the confirmation stored twice";
      const char* moment = tbs.empty() ? "during the confirmation" : "after it was stored";
      ++hit[moment];
      if (tbs.empty()) interrupted_confirmation = true;
      for (const auto& t : trials_of(sw)) {  // the kill came after the first pass
        ASSERT_EQ(t.status, TrialStatus::ok) << t.key << ": " << t.reason;
        if (!finished.count(t.key)) finished[t.key] = t;
        EXPECT_EQ(t, finished.at(t.key)) << t.key << " changed after it had finished";
      }
      if (fs::exists(sw.out)) {
        EXPECT_NO_THROW(autotune::test::read_json(sw.out)) << read_text(sw.out);
      }
      if (HasFailure()) {
        ADD_FAILURE() << "kill " << done << " (" << moment << ", " << (group ? "group" : "tuner")
                      << ") of " << sw.name << "\n"
                      << read_text(sw.log);
        return;
      }
    }
    const auto fin = autotune::test::run_command(sw.command + " >> " + sw.log + " 2>&1");
    ASSERT_EQ(fin.exit_code, 0) << read_text(sw.log);

    const auto starts = read_starts(sw.starts_log);
    const std::vector<Start> last(starts.begin() + long(seen), starts.end());
    // The final invocation runs the whole confirmation, unless an earlier one stored it.
    EXPECT_EQ(check_invocation_starts(last, order, "the final invocation"),
              stored ? std::vector<Start>{} : order);
    std::map<std::string, int> first_pass;
    for (const auto& s : starts) first_pass[s.key] += s.round == 0;
    for (const auto& k : kKeys) EXPECT_EQ(first_pass[k], 1) << k << ": a first-pass trial rerun";
    // One whole confirmation in all: the one the stored decision came from.
    const auto tbs = tie_breaks_of(sw);
    ASSERT_EQ(tbs.size(), 1u) << read_text(sw.log);
    EXPECT_EQ(decision_of(tbs[0]), decision_of(ref_tbs[0])) << read_text(sw.log);
    if (interrupted_confirmation) ++redone;
    const auto trials = trials_of(sw);
    ASSERT_EQ(trials.size(), kKeys.size()) << "trials lost";
    for (const auto& t : trials) {
      EXPECT_EQ(t.status, TrialStatus::ok) << t.key;
      if (finished.count(t.key)) {
        EXPECT_EQ(t, finished.at(t.key)) << t.key << " touched again";
      }
    }
    profiler::RunStore store(sw.db, profiler::OpenMode::read_only);
    EXPECT_EQ(store.integrity_check(), "ok");
    EXPECT_EQ(autotune::test::read_json(sw.out), ref_best)
        << "best.json differs from the uninterrupted sweep's\n"
        << read_text(sw.log);
    for (const auto& entry : fs::directory_iterator(fs::path(sw.out).parent_path()))
      EXPECT_EQ(entry.path().filename().string().find("best.json.tmp"), std::string::npos)
          << "leftover " << entry.path();
    if (HasFailure()) return;
    ++sweeps;
  }
  std::printf(
      "confirmation kill storm: %d kills (%d during the confirmation, %d after it was stored) "
      "over %d sweeps (%d with the confirmation redone), seed %u: %d/%d resumes correct\n",
      done, hit["during the confirmation"], hit["after it was stored"], sweeps, redone, storm.seed,
      done, done);
  EXPECT_GT(hit["during the confirmation"], 0);
  EXPECT_GT(hit["after it was stored"], 0);
}

}  // namespace
}  // namespace hybrid::faults
