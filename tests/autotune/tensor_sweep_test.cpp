// A real 4-rank sweep over tensor-parallel layouts (tp 1 and 2 × pipeline
// stages 1 and 2 × ZeRO 0 and 1 of a 2-block model with 2 heads: 8
// candidates, so that the model strategy, which runs at least 6, has a choice
// to make): hybrid-tune starts hybrid-train trials under mpirun, every layout
// runs, the store holds each trial with its layout and its batch triad over
// the 4 / (pp · tp) data-parallel ranks, the written best config carries
// tensor_model_parallel_size, and the `model` strategy picks its own fastest
// trial; how near that comes to the grid's best is bench_tune's measurement
// (layout_sweep_util.h).
// `predict` ranks the layouts for 8 ranks from the grid's trials. And a tp 2
// run moves the bytes over its tp group that the cost model charges.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "autotune/tensor_cost.h"
#include "engine/model/gpt2/gpt2.h"
#include "layout_sweep_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;

TEST(TensorSweep, FourRanksTryEveryTpLayoutAndTheModelPicksItsFastestTrial) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json",
                   test::tiny_config({{"gradient_accumulation_steps", 4},
                                      {"hybrid", {{"model", {{"n_embd", 64}, {"seq_len", 32}}}}}}));
  test::write_json(dir / "space.json",
                   json::parse(R"({"tp": [1, 2], "pp": [1, 2], "stage": [0, 1]})"));
  std::map<std::string, profiler::TrialRow> t;
  ASSERT_NO_FATAL_FAILURE(test::run_grid_sweep(dir, 8, t));
  std::map<std::pair<int, int>, int> layouts;  // (pp, tp) -> trials
  for (const auto& [key, row] : t) {
    const json cfg = json::parse(row.config_json);
    const int pp = cfg.at("pipeline").at("stages").get<int>();
    const int tp = cfg.at("tensor_model_parallel_size").get<int>();
    EXPECT_THAT(key, ::testing::HasSubstr(fmt::format("pp={},tp={}", pp, tp)));
    // The triad counts the 4 / (pp · tp) data-parallel ranks.
    EXPECT_EQ(cfg.at("train_batch_size").get<int>(),
              cfg.at("train_micro_batch_size_per_gpu").get<int>() * 4 * (4 / (pp * tp)))
        << key;
    ++layouts[{pp, tp}];
  }
  EXPECT_EQ(layouts, (std::map<std::pair<int, int>, int>{
                         {{1, 1}, 2}, {{1, 2}, 2}, {{2, 1}, 2}, {{2, 2}, 2}}));
  EXPECT_TRUE(test::read_json(dir / "grid.json").contains("tensor_model_parallel_size"));

  test::expect_model_sweep_picks_its_fastest_trial(dir, t);

  // `predict` ranks the layouts at 8 ranks from the grid's trials.
  const auto predicted = test::run_command(
      fmt::format("{} predict --config {} --space {} --db {} --world 8", test::tune_bin(),
                  dir / "cfg.json", dir / "space.json", dir / "grid.db"));
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  EXPECT_THAT(predicted.output, ::testing::HasSubstr("fitted to 8 trial(s) (8 at 4 ranks)"));
  for (const char* key : {"mbs=1,gas=4,stage=0,pp=1,tp=2", "mbs=1,gas=4,stage=1,pp=2,tp=2"})
    EXPECT_THAT(predicted.output, ::testing::HasSubstr(key));
}

TEST(TensorSweep, ATpRunMovesTheBytesTheCostModelCharges) {
  test::TempDir dir;
  json cfg = test::tiny_config({{"gradient_accumulation_steps", 3},
                                {"tensor_model_parallel_size", 2},
                                {"hybrid", {{"activation_checkpointing", {{"every", 2}}}}}});
  test::write_json(dir / "cfg.json", cfg);
  const auto run = test::run_command(
      fmt::format("{} -np 2 {} --config {} --steps 2 --quiet --result {}", HYBRID_MPIEXEC,
                  test::train_bin(), dir / "cfg.json", dir / "result.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const json result = test::read_json(dir / "result.json");
  const json& tp = result.at("comm_bytes_per_step_by_group").at("tp");
  double measured = 0;
  for (const auto& [kind, bytes] : tp.items()) measured += bytes.get<double>();
  const engine::Config parsed = engine::parse_config(cfg, 2);
  engine::GPT2 whole(parsed.model, parsed.padded_vocab()),
      piece(parsed.model, parsed.padded_vocab(), {2, 0});
  const TensorCost c =
      tensor_cost(parsed, whole, piece, default_rates(kernels::BackendKind::cpu, 2));
  EXPECT_EQ(c.all_reduces, 4 * 2 + 2 + 1);  // block 0 of 2 is checkpointed (every 2nd)
  EXPECT_DOUBLE_EQ(measured, c.bytes_per_step) << tp.dump();
}

}  // namespace
}  // namespace hybrid::autotune
