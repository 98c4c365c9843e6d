// A 2-stage pipeline run of hybrid-train (`mpirun -np 2`, --db) as the run
// store keeps it: collective statistics split by communicator group (the pp
// group's sends and receives, ZeRO's dp group, the tied embedding's group),
// each rank's pipeline stage, and each step's bubble per rank: more than 0
// (a stage always waits on its neighbour in 1F1B) and less than the rank's step.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "engine_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

constexpr int kSteps = 3;

profiler::RunProfile train_pipeline(const test::TempDir& dir) {
  const nlohmann::json patch = {
      {"gradient_accumulation_steps", 4},
      {"hybrid", {{"model", {{"n_layer", 4}}}}},
      {"pipeline", {{"stages", 2}}},
  };
  const std::string cfg = dir / "pp2.json", db = dir / "pp2.db";
  test::write_json(cfg, test::tiny_config_json(patch));
  const auto cmd =
      test::run_command(test::launcher(2) + test::tool("hybrid-train") + " --quiet --config " +
                        cfg + fmt::format(" --steps {} --db {}", kSteps, db));
  EXPECT_EQ(cmd.exit_code, 0) << cmd.output;
  if (cmd.exit_code != 0) return {};
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  return store.load_profile(store.list_runs().at(0).id);
}

TEST(PipelineStore, CommStatsByGroupStagesAndBubblePerRank) {
  test::TempDir dir;
  const auto p = train_pipeline(dir);
  ASSERT_EQ(p.ranks.size(), 2u);
  for (const auto& r : p.ranks) EXPECT_EQ(r.pipeline_stage, r.rank) << "rank " << r.rank;

  std::set<std::tuple<int, std::string, std::string>> seen;  // (rank, group, op)
  for (const auto& c : p.comm) seen.insert({c.rank, c.group, c.op});
  for (int rank : {0, 1}) {
    SCOPED_TRACE(fmt::format("rank {}", rank));
    EXPECT_TRUE(seen.count({rank, "pp", "send"}));
    EXPECT_TRUE(seen.count({rank, "pp", "recv"}));
    EXPECT_TRUE(seen.count({rank, "tied", "all_reduce"}));  // the tied embedding's gradient
    EXPECT_TRUE(seen.count({rank, "dp", "reduce_scatter"}) ||
                seen.count({rank, "dp", "all_reduce"}));  // ZeRO's gradient reduction
    // Sends and receives go over the pp group only.
    for (const char* g : {"world", "dp", "tied"}) {
      EXPECT_FALSE(seen.count({rank, g, "send"})) << g;
      EXPECT_FALSE(seen.count({rank, g, "recv"})) << g;
    }
  }

  ASSERT_EQ(p.step_ranks.size(), size_t(2 * kSteps));
  for (const auto& s : p.step_ranks) {
    SCOPED_TRACE(fmt::format("step {} rank {}", s.step, s.rank));
    // Both hold by construction, not by timing: the bubble is the sum of the
    // intervals spent inside the step's pipeline sends and receives (each a
    // call that takes nanoseconds at least, on a nanosecond clock), and those
    // intervals are part of the rank's step.
    const double step_ms = s.compute_ms + s.exposed_comm_ms;  // the rank's own step time
    EXPECT_GT(s.bubble_ms, 0.0);
    EXPECT_LT(s.bubble_ms, step_ms);
  }
}

// Without pipeline stages there is no bubble and every collective is the world's.
TEST(PipelineStore, ADataParallelRunHasNoBubbleAndOnlyTheWorldGroup) {
  test::TempDir dir;
  const std::string cfg = dir / "dp.json", db = dir / "dp.db";
  test::write_json(cfg, test::tiny_config_json({}));
  const auto cmd = test::run_command(test::launcher(2) + test::tool("hybrid-train") +
                                     " --quiet --config " + cfg + " --steps 2 --db " + db);
  ASSERT_EQ(cmd.exit_code, 0) << cmd.output;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto p = store.load_profile(store.list_runs().at(0).id);
  ASSERT_FALSE(p.comm.empty());
  for (const auto& c : p.comm) EXPECT_EQ(c.group, "world") << c.op;
  for (const auto& r : p.ranks) EXPECT_EQ(r.pipeline_stage, 0);
  for (const auto& s : p.step_ranks) EXPECT_EQ(s.bubble_ms, 0.0);
}

}  // namespace
}  // namespace hybrid
