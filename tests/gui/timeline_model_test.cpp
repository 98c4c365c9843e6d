// The timeline model over a real run store: lanes per rank in a fixed order,
// nesting rows without overlaps, the ranks' clocks aligned through their
// epochs, the vertical layout, level of detail (sub-pixel events merged, none
// lost) and hit testing.
#include "gui/model/timeline_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "gui/model/database.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

using profiler::Category;
using test::FixtureRun;
using test::FixtureRunSpec;
using test::FixtureWriter;
using test::TempDir;

struct TimelineFixture {
  TempDir dir;
  FixtureRun run;
  RunData data;
  explicit TimelineFixture(FixtureRunSpec spec) {
    const auto path = dir / "hybrid.db";
    {
      profiler::RunStore store(path);
      run = FixtureWriter(store).write_run(spec);
    }
    Database db(path);
    data = *db.load_run(run.run_id);
  }
};

FixtureRunSpec gpu_spec() {
  FixtureRunSpec s;
  s.gpu_lane = true;
  return s;
}

TEST(TimelineModel, LanesPerRankInOrder) {
  TimelineFixture f(gpu_spec());
  const TimelineModel m = build_timeline(f.data.events, f.data.profile.ranks, 9);
  ASSERT_EQ(m.lanes.size(), 8u);
  const LaneKind order[] = {LaneKind::compute, LaneKind::comm, LaneKind::optimizer, LaneKind::gpu};
  for (size_t i = 0; i < m.lanes.size(); ++i) {
    EXPECT_EQ(m.lanes[i].rank, int(i / 4));
    EXPECT_EQ(m.lanes[i].kind, order[i % 4]);
  }
  EXPECT_EQ(m.lanes[0].label, "rank 0 · compute");
  EXPECT_EQ(m.lanes[3].label, "rank 0 · GPU stream 0");
  EXPECT_EQ(m.lanes[3].gpu_stream, 0);
  EXPECT_EQ(m.lanes[5].label, "rank 1 · comm");

  // Nesting on the compute lane: step (0) > model (1) > block (2) > attn/mlp (3) > leaf (4);
  // the bucket wait sits inside h.0's backward at depth 3.
  EXPECT_EQ(m.lanes[0].rows.size(), 5u);
  for (const auto& te : m.lanes[0].rows[0].events)
    EXPECT_EQ(m.events[te.source].category, Category::step);
  bool wait_at_3 = false;
  for (const auto& te : m.lanes[0].rows[3].events)
    wait_at_3 = wait_at_3 || m.events[te.source].category == Category::comm;
  EXPECT_TRUE(wait_at_3);
  // Lanes hold only their kind.
  for (const auto& te : m.lanes[1].rows[0].events)
    EXPECT_EQ(m.events[te.source].lane, profiler::kLaneComm);
  for (const auto& row : m.lanes[2].rows)
    for (const auto& te : row.events) EXPECT_EQ(m.events[te.source].category, Category::optimizer);
  for (const auto& row : m.lanes[3].rows)
    for (const auto& te : row.events) EXPECT_EQ(m.events[te.source].category, Category::kernel);
}

TEST(TimelineModel, EveryEventOnceAndRowsNeverOverlap) {
  TimelineFixture f(gpu_spec());
  const TimelineModel m = build_timeline(f.data.events, f.data.profile.ranks);
  EXPECT_EQ(m.event_count(), size_t(f.run.events));  // both profiled steps
  std::set<uint32_t> seen;
  for (const auto& lane : m.lanes)
    for (const auto& row : lane.rows) {
      for (size_t i = 0; i < row.events.size(); ++i) {
        EXPECT_TRUE(seen.insert(row.events[i].source).second);
        EXPECT_LE(row.events[i].start_ns, row.events[i].end_ns);
        if (i > 0) {
          EXPECT_LE(row.events[i - 1].end_ns, row.events[i].start_ns) << lane.label;
        }
      }
    }
  EXPECT_EQ(seen.size(), m.event_count());
  // The step filter keeps one step.
  const TimelineModel one = build_timeline(f.data.events, f.data.profile.ranks, 5);
  EXPECT_EQ(one.event_count() * 2, m.event_count());
  for (const auto& e : one.events) EXPECT_EQ(e.step, 5);
}

TEST(TimelineModel, RankClocksAreAligned) {
  TimelineFixture f(FixtureRunSpec{});
  const TimelineModel m = build_timeline(f.data.events, f.data.profile.ranks, 9);
  ASSERT_TRUE(m.clocks_aligned);
  // Rank 1's tracer epoch is 7 ms later, so its events carry 7 ms smaller times;
  // aligned, both ranks' step events start together, at the origin.
  std::vector<int64_t> step_start;
  for (const auto& lane : m.lanes)
    if (lane.kind == LaneKind::compute) step_start.push_back(lane.rows[0].events.at(0).start_ns);
  ASSERT_EQ(step_start.size(), 2u);
  EXPECT_EQ(step_start[0], 0);
  EXPECT_EQ(step_start[1], 0);
  EXPECT_EQ(m.rank_offset_ns[1] - m.rank_offset_ns[0], f.run.spec.rank_epoch_skew_ns);
  // Rank 1 is 1.1x slower: the timeline ends with its step.
  EXPECT_EQ(m.end_ns, int64_t(std::llround(f.run.expect.at(9)[1].step_ms * 1e6)));

  // Without epochs the raw clocks are kept (and said to be unaligned).
  const TimelineModel raw = build_timeline(f.data.events, {}, 9);
  EXPECT_FALSE(raw.clocks_aligned);
  EXPECT_EQ(raw.rank_offset_ns[0] - raw.rank_offset_ns[1], 0);
}

TEST(TimelineModel, LaneLayoutStacksRows) {
  TimelineFixture f(gpu_spec());
  const TimelineModel m = build_timeline(f.data.events, f.data.profile.ranks, 9);
  const float row = 18, gap = 6;
  const auto g = layout_lanes(m, row, gap);
  ASSERT_EQ(g.size(), m.lanes.size());
  float y = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_FLOAT_EQ(g[i].y, y);
    EXPECT_FLOAT_EQ(g[i].height, row * float(m.lanes[i].rows.size()));
    y += g[i].height + gap;
  }
  EXPECT_FLOAT_EQ(g[0].height, 5 * row);  // compute: five nesting rows
  EXPECT_FLOAT_EQ(g[1].height, row);      // comm
}

// The events of a row that intersect [b, e).
size_t visible(const TimelineRow& row, double b, double e) {
  return size_t(std::count_if(row.events.begin(), row.events.end(), [&](const TimelineEvent& t) {
    return double(t.end_ns) > b && double(t.start_ns) < e;
  }));
}

TEST(TimelineModel, LevelOfDetailMergesSubPixelEventsAndLosesNone) {
  // 8 pieces per leaf forward: 4 blocks x 6 leaves x 2 micro-steps x 8 = 384 events
  // in the deepest row.
  FixtureRunSpec spec;
  spec.n_layer = 4;
  spec.repeat_leaves = 8;
  TimelineFixture f(spec);
  const TimelineModel m = build_timeline(f.data.events, f.data.profile.ranks, 9);
  const TimelineRow& deepest = m.lanes[0].rows.back();
  ASSERT_EQ(deepest.events.size(), 384u);
  const double width_px = 200, span = double(m.end_ns);
  std::vector<TimelineBox> boxes;
  layout_row(deepest, 0, span, span / width_px, 1.0f, boxes);
  // Zoomed out: far fewer boxes than events, every event in exactly one box.
  EXPECT_LT(boxes.size(), deepest.events.size() / 2);
  EXPECT_LE(boxes.size(), size_t(width_px) + 1);
  size_t covered = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    covered += boxes[i].count;
    EXPECT_GE(boxes[i].x1 - boxes[i].x0, 1.0f);
    if (i > 0) {
      EXPECT_EQ(boxes[i].first, boxes[i - 1].first + boxes[i - 1].count);
    }
  }
  EXPECT_EQ(covered, visible(deepest, 0, span));

  // Zoomed into 1 ms: every visible event is its own box, at its own position.
  boxes.clear();
  const double b = span * 0.3, e = b + 1e6, ns_per_px = 1e6 / 1000;
  layout_row(deepest, b, e, ns_per_px, 1.0f, boxes);
  EXPECT_EQ(boxes.size(), visible(deepest, b, e));
  for (const auto& box : boxes) {
    EXPECT_EQ(box.count, 1u);
    const TimelineEvent& te = deepest.events[box.first];
    EXPECT_NEAR(box.x0, (double(te.start_ns) - b) / ns_per_px, 1e-2);
    EXPECT_NEAR(box.x1, std::max((double(te.end_ns) - b) / ns_per_px, double(box.x0) + 1), 1e-2);
  }
}

TEST(TimelineModel, HitTesting) {
  TimelineFixture f(FixtureRunSpec{});
  const TimelineModel m = build_timeline(f.data.events, f.data.profile.ranks, 9);
  const TimelineRow& comm = m.lanes[1].rows[0];
  ASSERT_GE(comm.events.size(), 2u);
  const TimelineEvent& first = comm.events[0];
  const double mid = 0.5 * double(first.start_ns + first.end_ns);
  EXPECT_EQ(event_at(comm, mid, 0), 0);
  // Just before it: only within the tolerance.
  EXPECT_EQ(event_at(comm, double(first.start_ns) - 1000, 0), -1);
  EXPECT_EQ(event_at(comm, double(first.start_ns) - 1000, 2000), 0);
  // Far after the last event: nothing.
  EXPECT_EQ(event_at(comm, double(m.end_ns) + 1e9, 1e3), -1);
  const TimelineEvent& last = comm.events.back();
  EXPECT_EQ(event_at(comm, double(last.end_ns) - 1, 0), int(comm.events.size() - 1));
}

}  // namespace
}  // namespace hybrid::gui
