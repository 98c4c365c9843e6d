// The Generation window's view-model over a real store file read through the
// viewer's read-only Database: every generation row with its run's name, in
// the store's order, one run's alone, the bars' scale (the largest tpot p99)
// and whether the rollout breakdown columns show.
#include "gui/model/generation_model.h"

#include <gtest/gtest.h>

#include "gui/model/database.h"
#include "tests/gui/generation_db.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

TEST(GenerationModel, EveryRowWithItsRunNameScaleAndBreakdown) {
  test::TempDir dir;
  const auto path = dir / "gen.db";
  const auto ids = test::write_generation_db(path);
  const uint64_t before = test::file_checksum(path);
  Database db(path);
  ASSERT_TRUE(db.is_open()) << db.error();
  ASSERT_EQ(db.generations().size(), 6u);

  const auto all = build_generation_table(db.runs(), db.generations());
  ASSERT_EQ(all.lines.size(), 6u);
  EXPECT_EQ(all.lines[0].run_name, "hybrid-generate");
  EXPECT_EQ(all.lines[1].run_name, "hybrid-generate --bench");
  EXPECT_EQ(all.lines[1].row.test, "pp512");
  EXPECT_EQ(all.lines[2].row.test, "tg128");
  EXPECT_EQ(all.lines[5].run_name, "rollout");
  EXPECT_EQ(all.lines[5].row.step, 2);
  EXPECT_EQ(all.tpot_scale_ms, ids.largest_tpot_p99_ms);
  EXPECT_TRUE(all.any_breakdown);

  const auto bench = build_generation_table(db.runs(), db.generations(), ids.bench_run);
  ASSERT_EQ(bench.lines.size(), 2u);
  EXPECT_EQ(bench.tpot_scale_ms, 20.0);  // tg128's p99; pp512 has no decode step
  EXPECT_FALSE(bench.any_breakdown);
  EXPECT_TRUE(build_generation_table(db.runs(), db.generations(), ids.training_run).lines.empty());
  // A row of a run the list lacks shows without a name.
  const auto orphan = build_generation_table({}, db.generations(), ids.generate_run);
  ASSERT_EQ(orphan.lines.size(), 1u);
  EXPECT_EQ(orphan.lines[0].run_name, "");

  EXPECT_DOUBLE_EQ(bar_fraction(20, 80), 0.25);
  EXPECT_EQ(bar_fraction(120, 80), 1.0);
  EXPECT_EQ(bar_fraction(5, 0), 0.0);
  EXPECT_EQ(test::file_checksum(path), before);
}

TEST(GenerationModel, TheDatabaseFollowsNewRows) {
  test::TempDir dir;
  const auto path = dir / "gen.db";
  profiler::RunStore writer(path);
  const int64_t run = writer.create_run({});
  Database db(path);
  EXPECT_TRUE(db.generations().empty());
  writer.add_generation(run, test::generation_row(profiler::GenerationKind::generate, 12));
  EXPECT_TRUE(db.refresh());
  ASSERT_EQ(db.generations().size(), 1u);
  EXPECT_EQ(db.generations()[0].tpot_ms->p50, 12.0);
}

}  // namespace
}  // namespace hybrid::gui
