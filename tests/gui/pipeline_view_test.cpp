// The viewer's models of a pipeline run: timeline lanes named "rank r · stage s"
// (so the stages' 1F1B pattern reads off the lanes), the collectives window's
// rows split by communicator group, and its bubble per stage.
#include <gtest/gtest.h>

#include "gui/model/comm_model.h"
#include "gui/model/timeline_model.h"

namespace hybrid::gui {
namespace {

profiler::EventSet two_ranks_events() {
  profiler::EventSet set;
  set.names = {"forward", "send"};
  for (uint16_t r : {0, 1}) {
    profiler::Event compute;
    compute.rank = r;
    compute.dur_ns = 100;
    compute.step = 1;
    set.events.push_back(compute);
    profiler::Event send = compute;
    send.lane = profiler::kLaneComm;
    send.category = profiler::Category::comm;
    send.name_id = 1;
    set.events.push_back(send);
  }
  return set;
}

std::vector<profiler::RankInfo> ranks(int stage0, int stage1) {
  std::vector<profiler::RankInfo> out(2);
  out[0].rank = 0, out[0].pipeline_stage = stage0;
  out[1].rank = 1, out[1].pipeline_stage = stage1;
  return out;
}

TEST(PipelineView, TimelineLanesNameTheStage) {
  const TimelineModel m = build_timeline(two_ranks_events(), ranks(0, 1));
  ASSERT_EQ(m.lanes.size(), 4u);
  EXPECT_EQ(m.lanes[0].label, "rank 0 · stage 0 · compute");
  EXPECT_EQ(m.lanes[1].label, "rank 0 · stage 0 · comm");
  EXPECT_EQ(m.lanes[2].label, "rank 1 · stage 1 · compute");
  EXPECT_EQ(m.lanes[3].label, "rank 1 · stage 1 · comm");
  // Without pipeline stages the labels stay as they were.
  const TimelineModel plain = build_timeline(two_ranks_events(), ranks(0, 0));
  EXPECT_EQ(plain.lanes[2].label, "rank 1 · compute");
}

TEST(PipelineView, CollectivesRowsCarryTheirGroupAndStagesTheirBubble) {
  profiler::RunProfile p;
  p.ranks = ranks(0, 1);
  p.comm = {{0, "all_reduce", 64, 2, 200, 90, 110, 1, 1, "intra_host", "tied"},
            {0, "all_reduce", 64, 1, 100, 100, 100, 1, 1, "intra_host", "world"},
            {1, "recv", 4096, 4, 400, 90, 110, 1, 1, "intra_host", "pp"}};
  p.step_ranks = {{1, 0, 9, 2, 1, 4}, {1, 1, 7, 2, 3, 2}};
  CommSummary s = build_comm_summary(p);
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].group, "tied");
  EXPECT_EQ(s.rows[1].group, "world");
  EXPECT_EQ(s.rows[2].group, "pp");
  sort_comm_rows(s.rows, CommColumn::op, true);  // ties keep op, group order
  EXPECT_EQ(s.rows[0].group, "tied");
  ASSERT_EQ(s.bubbles.size(), 2u);
  EXPECT_DOUBLE_EQ(s.bubbles[0].bubble_ms, 4);
  EXPECT_DOUBLE_EQ(s.bubbles[0].step_ms, 10);
  EXPECT_DOUBLE_EQ(s.bubbles[1].fraction(), 0.2);
}

}  // namespace
}  // namespace hybrid::gui
