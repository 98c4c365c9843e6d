// The step timeline as data: lanes per rank (compute, communication, optimizer,
// GPU streams), each split into rows by nesting depth, with the ranks' clocks
// aligned; and the level-of-detail pass that turns the events visible in a time
// window into boxes at least a pixel wide, merging runs of sub-pixel events, so a
// frame costs O(visible events) with tiny constants even for 100k events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::gui {

enum class LaneKind { compute, comm, optimizer, gpu };

struct TimelineEvent {
  int64_t start_ns = 0;  // aligned: since the timeline's origin
  int64_t end_ns = 0;
  uint32_t source = 0;  // index into TimelineModel::events
};

// Events of one lane at one nesting depth: sorted by start and never overlapping,
// so their ends are sorted too (both allow binary search).
struct TimelineRow {
  std::vector<TimelineEvent> events;
};

struct TimelineLane {
  int rank = 0;
  LaneKind kind = LaneKind::compute;
  int gpu_stream = -1;            // for gpu lanes: Event::lane − kLaneGpuBase
  std::string label;              // "rank 0 · compute"
  std::vector<TimelineRow> rows;  // by depth
};

struct TimelineModel {
  std::vector<profiler::Event> events;  // as read; names index `names`
  std::vector<std::string> names;
  std::vector<TimelineLane> lanes;      // by rank, then compute, comm, optimizer, GPU streams
  std::vector<int64_t> rank_offset_ns;  // aligned = start_ns + rank_offset_ns[rank] − origin
  int64_t end_ns = 0;                   // the aligned end of the last event (begin is 0)
  bool clocks_aligned = false;          // the ranks' tracer epochs were known

  const std::string& name_of(const profiler::Event& e) const;
  size_t event_count() const { return events.size(); }
};

// Lanes from the events (only `step` when given). Device records go to GPU lanes,
// optimizer scopes to the optimizer lane, the comm lane's collectives to comm,
// everything else of the host (module scopes, waits, step and data) to compute.
// Ranks' clocks are aligned by RankInfo::epoch_unix_ns when every rank has one.
// Each rank has a compute lane, and a comm lane when the run has collectives.
TimelineModel build_timeline(const profiler::EventSet& events,
                             const std::vector<profiler::RankInfo>& ranks,
                             std::optional<int64_t> step = std::nullopt);

// Vertical layout in pixels: lane i occupies [y, y + height); each row is row_px
// tall; lanes are separated by gap_px.
struct LaneGeometry {
  float y = 0;
  float height = 0;
};
std::vector<LaneGeometry> layout_lanes(const TimelineModel& m, float row_px, float gap_px);

// A box to draw: one event (count 1) or `count` consecutive sub-pixel events
// merged (first is the first of them); x in pixels from the view's left edge.
struct TimelineBox {
  float x0 = 0;
  float x1 = 0;
  uint32_t first = 0;  // index into the row's events
  uint32_t count = 1;
};

// Boxes of the row's events that intersect [view_begin_ns, view_end_ns) drawn
// at ns_per_px. An event narrower than min_px is merged with the following
// narrow events that start within min_px of the merged box's end; every box is
// at least min_px wide. Appends to `out`.
void layout_row(const TimelineRow& row, double view_begin_ns, double view_end_ns, double ns_per_px,
                float min_px, std::vector<TimelineBox>& out);

// The event of the row under time t (± tolerance_ns), the innermost being the row
// itself; -1 when none. When several are within the tolerance, the nearest wins.
int event_at(const TimelineRow& row, double t_ns, double tolerance_ns);

}  // namespace hybrid::gui
