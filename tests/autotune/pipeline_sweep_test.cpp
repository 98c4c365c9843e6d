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

TEST(PipelineSweep, FourRanksTryEveryLayoutAndTheModelPicksItsFastestTrial) {
  test::TempDir dir;
  test::write_json(
      dir / "cfg.json",
      test::tiny_config(
          {{"gradient_accumulation_steps", 4},
           {"hybrid", {{"model", {{"n_layer", 4}, {"n_embd", 64}, {"seq_len", 32}}}}}}));
  test::write_json(dir / "space.json",
                   json::parse(R"({"mbs": [1, 2], "pp": [1, 2, 4], "stage": [0, 1]})"));
  std::map<std::string, profiler::TrialRow> t;
  ASSERT_NO_FATAL_FAILURE(test::run_grid_sweep(dir, 12, t));
  std::map<int, int> layouts;  // pipeline stages -> trials
  for (const auto& [key, row] : t) {
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

  test::expect_model_sweep_picks_its_fastest_trial(dir, t);
}

}  // namespace
}  // namespace hybrid::autotune
