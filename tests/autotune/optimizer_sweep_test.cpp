// A real sweep over the optimizer axis on two ranks (mpirun) over this
// machine's unshaped links (shared memory; 8 blocks, 100 tensors). The tuner
// must time OneBitAdam's compressed phase (not its warm-up), record it, and
// pick whichever of AdamW and OneBitAdam is faster measured, never the slower
// (issue 31: "unshaped, the tuner does not pick it when it does not win").
// Which one wins is this machine's: since the grouped exchange (one per phase
// for all tensors) OneBitAdam often beats AdamW here, whose shared-memory
// all-reduce competes for the 2 loaded cores, and the two swap places with the
// load; so the test asserts the choice against the measurement, not a name.
// The machine is shared, so --confirm-best runs both again in interleaved
// rounds and the tuner decides on the pooled step times (docs/reliability.md).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "autotune/best_config.h"
#include "autotune/optimizer_axis.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::TrialRow;
using profiler::TrialStatus;
using ::testing::HasSubstr;

uint64_t calls_of(profiler::RunStore& store, int64_t run_id, const std::string& op) {
  uint64_t n = 0;
  for (const auto& row : store.comm_stats(run_id))
    if (row.op == op) n += uint64_t(row.count);
  return n;
}

TEST(OptimizerSweep, OnUnshapedLinksTheTunerTimesOneBitAdamCompressingAndPicksTheFasterMeasured) {
  test::TempDir dir;
  const json cfg = test::tiny_config(
      {{"hybrid",
        {{"model", {{"n_embd", 64}, {"n_head", 4}, {"vocab_size", 256}, {"seq_len", 32}}}}}});
  test::write_json(dir / "cfg.json", cfg);
  test::write_json(dir / "space.json", json::parse(R"({"opt": ["AdamW", "OneBitAdam"]})"));
  const std::string db = dir / "tune.db";
  const auto r = test::run_command(
      fmt::format("{} --config {} --space {} --nprocs 2 --strategy grid --steps 30 --start-step 6 "
                  "--confirm-best --no-probe --db {} --out {}",
                  test::tune_bin(), dir / "cfg.json", dir / "space.json", db, dir / "best.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  std::map<std::string, TrialRow> t;
  for (auto& row : store.trials(sweeps[0].id)) t[row.key] = row;
  ASSERT_EQ(t.size(), 2u);
  const std::string adamw_key = "mbs=1,gas=1,stage=0,opt=AdamW";
  const std::string onebit_key = "mbs=1,gas=1,stage=0,opt=OneBitAdam";
  for (const auto& [key, row] : t)
    ASSERT_EQ(row.status, TrialStatus::ok) << key << ": " << row.reason;
  const TrialRow& adamw = t.at(adamw_key);
  const TrialRow& onebit = t.at(onebit_key);

  // The candidate (and so a best config) keeps the default freeze step; the
  // trial ran with its freeze before the window and compressed there.
  EXPECT_EQ(json::parse(onebit.config_json)["optimizer"]["params"]["freeze_step"],
            kDefaultFreezeStep);
  const json trial_cfg = test::read_json(dir / ("tune/sweep-1/" + onebit_key + "/config.json"));
  EXPECT_EQ(trial_cfg["optimizer"]["params"]["freeze_step"], 4);
  EXPECT_EQ(
      best_config_json(json::parse(onebit.config_json), 2)["optimizer"]["params"]["freeze_step"],
      kDefaultFreezeStep);
  ASSERT_TRUE(onebit.run_id && adamw.run_id);
  EXPECT_GT(calls_of(store, *onebit.run_id, "all_to_all"), 0u) << "the compressed all-reduce ran";
  EXPECT_EQ(calls_of(store, *adamw.run_id, "all_to_all"), 0u);

  // The choice is the confirmation's winner, the faster of the two over the
  // interleaved rounds; the slower is not picked.
  const auto ties = store.tie_breaks(sweeps[0].id);
  ASSERT_EQ(ties.size(), 1u);
  std::map<std::string, double> confirmed_ms;
  const json rounds = json::parse(ties[0].candidates_json);
  for (const auto& c : rounds)
    confirmed_ms[c.at("key").get<std::string>()] = c.at("confirmed_step_median_ms").get<double>();
  ASSERT_EQ(confirmed_ms.size(), 2u);
  const bool adamw_faster = confirmed_ms.at(adamw_key) <= confirmed_ms.at(onebit_key);
  const std::string faster = adamw_faster ? adamw_key : onebit_key;
  const std::string slower = adamw_faster ? onebit_key : adamw_key;
  EXPECT_EQ(ties[0].winner_key, faster);
  const TrialRow& chosen = t.at(ties[0].winner_key);
  EXPECT_NE(chosen.key, slower) << "the slower measured is never picked";
  EXPECT_THAT(r.output, HasSubstr("best: " + chosen.key));
  EXPECT_EQ(test::read_json(dir / "best.json"),
            best_config_json(json::parse(chosen.config_json), 2));
  std::printf(
      "2 ranks, unshaped: first pass AdamW %.2f, OneBitAdam (compressing) %.2f ms/step; "
      "confirmed (interleaved) %.2f vs %.2f ms/step (OneBitAdam / AdamW %.2fx); picked %s\n",
      *adamw.latency_ms, *onebit.latency_ms, confirmed_ms.at(adamw_key),
      confirmed_ms.at(onebit_key), confirmed_ms.at(onebit_key) / confirmed_ms.at(adamw_key),
      chosen.key.c_str());
}

}  // namespace
}  // namespace hybrid::autotune
