// A real 4-rank sweep over pipeline layouts (1, 2 and 4 stages of a 4-block
// model × ZeRO 0 and 1 × micro-batches 1 and 2: 12 candidates, so that the
// model strategy, which runs at least 6, has a choice to make): hybrid-tune
// starts hybrid-train trials under mpirun, every layout runs, the store holds
// each trial with its layout, the written best config carries the pipeline
// block, and the `model` strategy picks its own fastest trial; how near that
// comes to the grid's best is bench_tune's measurement (layout_sweep_util.h).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "layout_sweep_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::TrialStatus;

TEST(PipelineSweep, FourRanksTryEveryLayoutAndTheModelPicksItsFastestTrial) {
  test::TempDir dir;
  test::write_json(
      dir / "cfg.json",
      test::tiny_config(
          {{"gradient_accumulation_steps", 4},
           {"hybrid", {{"model", {{"n_layer", 4}, {"n_embd", 64}, {"seq_len", 32}}}}}}));
  test::write_json(dir / "space.json",
                   json::parse(R"({"mbs": [1, 2], "pp": [1, 2, 4], "stage": [0, 1]})"));
  const std::string common = test::layout_sweep_command(dir.path().string());
  const auto grid =
      test::run_command(fmt::format("{} --strategy grid --early-stop 0 --db {} --out {}", common,
                                    dir / "grid.db", dir / "grid.json"));
  ASSERT_EQ(grid.exit_code, 0) << grid.output;
  const auto t = test::trials_by_key(dir / "grid.db");
  ASSERT_EQ(t.size(), 12u) << grid.output;
  std::map<int, int> layouts;  // pipeline stages -> trials
  for (const auto& [key, row] : t) {
    ASSERT_EQ(row.status, TrialStatus::ok) << key << ": " << row.reason;
    const json cfg = json::parse(row.config_json);
    const int pp = cfg.at("pipeline").at("stages").get<int>();
    EXPECT_THAT(key, ::testing::HasSubstr(fmt::format("pp={}", pp)));
    // The triad counts the 4 / pp data-parallel ranks.
    EXPECT_EQ(cfg.at("train_batch_size").get<int>(),
              cfg.at("train_micro_batch_size_per_gpu").get<int>() * 4 * (4 / pp))
        << key;
    ++layouts[pp];
  }
  EXPECT_EQ(layouts, (std::map<int, int>{{1, 4}, {2, 4}, {4, 4}}));
  EXPECT_TRUE(test::read_json(dir / "grid.json").contains("pipeline"));

  const auto model = test::run_command(fmt::format("{} --strategy model --db {} --out {}", common,
                                                   dir / "model.db", dir / "model.json"));
  ASSERT_EQ(model.exit_code, 0) << model.output;
  test::expect_model_picks_its_fastest_trial(t, dir / "model.db", model.output);
}

}  // namespace
}  // namespace hybrid::autotune
