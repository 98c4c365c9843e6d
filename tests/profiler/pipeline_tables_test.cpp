// Pipeline runs in the data layer and the communication report: collectives
// split by communicator group, and each stage's bubble against its step time
// (a hand-made two-stage, three-rank profile with known sums).
#include <gtest/gtest.h>

#include "profiler/report_comm.h"
#include "profiler/tables/collective_groups.h"
#include "profiler/tables/pipeline_bubbles.h"

namespace hybrid::profiler {
namespace {

// Stage 0: ranks 0 and 2; stage 1: rank 1. Two steps each.
RunProfile two_stages() {
  RunProfile p;
  p.run.world_size = 3;
  for (int r : {0, 1, 2}) {
    RankInfo info;
    info.rank = r;
    info.pipeline_stage = r == 1 ? 1 : 0;
    p.ranks.push_back(info);
  }
  // {step, rank, compute, comm, exposed, bubble}: step time = compute + exposed.
  p.step_ranks = {{1, 0, 8, 3, 2, 1}, {1, 1, 6, 4, 4, 3}, {1, 2, 9, 1, 1, 3},
                  {2, 0, 8, 3, 2, 3}, {2, 1, 6, 4, 4, 5}, {2, 2, 9, 1, 1, 1}};
  p.comm = {{0, "send", 4096, 4, 4000, 900, 1100, 1, 1, "intra_host", "pp"},
            {1, "recv", 4096, 4, 8000, 1900, 2100, 0.5, 0.5, "intra_host", "pp"},
            {0, "all_reduce", 4096, 2, 2000, 900, 1100, 1, 1.5, "intra_host", "tied"},
            {0, "all_reduce", 4096, 1, 500, 500, 500, 2, 3, "intra_host", "dp"}};
  return p;
}

TEST(PipelineBubbles, PerStageMeansOverRanksAndSteps) {
  const auto b = stage_bubbles(two_stages());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].stage, 0);
  EXPECT_EQ(b[0].ranks, 2);
  // Rank 0: bubble (1 + 3) / 2 = 2, step 10; rank 2: bubble 2, step 10.
  EXPECT_DOUBLE_EQ(b[0].bubble_ms, 2.0);
  EXPECT_DOUBLE_EQ(b[0].step_ms, 10.0);
  EXPECT_DOUBLE_EQ(b[0].fraction(), 0.2);
  EXPECT_EQ(b[1].stage, 1);
  EXPECT_DOUBLE_EQ(b[1].bubble_ms, 4.0);
  EXPECT_DOUBLE_EQ(b[1].step_ms, 10.0);
  EXPECT_EQ(stage_of(two_stages(), 1), 1);
  EXPECT_EQ(stage_of(two_stages(), 9), 0);  // unknown rank
}

TEST(PipelineBubbles, NoneWithoutPipelineStages) {
  RunProfile p = two_stages();
  for (auto& r : p.ranks) r.pipeline_stage = 0;
  for (auto& s : p.step_ranks) s.bubble_ms = 0;
  EXPECT_FALSE(has_pipeline(p));
  EXPECT_TRUE(stage_bubbles(p).empty());
  EXPECT_EQ(comm_report(p).find("Pipeline bubble"), std::string::npos);
}

TEST(PipelineBubbles, CollectivesOfOneOpAndSizeSplitByGroup) {
  const auto groups = group_collectives(two_stages());
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].op, "all_reduce");
  EXPECT_EQ(groups[0].comm_group, "dp");
  EXPECT_EQ(groups[1].comm_group, "tied");
  EXPECT_EQ(groups[1].count, 2);
  EXPECT_EQ(groups[2].op, "recv");
  EXPECT_EQ(groups[2].comm_group, "pp");
}

TEST(PipelineBubbles, ReportNamesGroupsAndStages) {
  const std::string text = comm_report(two_stages());
  EXPECT_NE(text.find("By communicator group"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 0: bubble 2.00 ms of 10.00 ms (20.00%)"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 1: bubble 4.00 ms of 10.00 ms (40.00%)"), std::string::npos) << text;
  for (const char* g : {"pp", "tied", "dp"})
    EXPECT_NE(text.find(std::string("  ") + g + " "), std::string::npos) << g << "\n" << text;
}

}  // namespace
}  // namespace hybrid::profiler
