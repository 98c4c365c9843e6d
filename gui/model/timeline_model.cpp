#include "gui/model/timeline_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

namespace hybrid::gui {

using profiler::Category;
using profiler::Event;

namespace {

struct LaneKey {
  int rank;
  int order;  // compute 0, comm 1, optimizer 2, GPU 3 + stream
  friend bool operator<(const LaneKey& a, const LaneKey& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.order < b.order;
  }
};

LaneKey lane_key(const Event& e) {
  if (e.lane >= profiler::kLaneGpuBase) return {e.rank, 3 + (e.lane - profiler::kLaneGpuBase)};
  if (e.lane == profiler::kLaneComm) return {e.rank, 1};
  if (e.category == Category::optimizer) return {e.rank, 2};
  return {e.rank, 0};
}

// `who` names the rank: "rank 3", or "rank 3 · stage 1" in a pipeline run, so
// the stages' lanes show the 1F1B pattern.
TimelineLane make_lane(const LaneKey& k, const std::string& who) {
  TimelineLane l;
  l.rank = k.rank;
  switch (k.order) {
    case 0:
      l.kind = LaneKind::compute;
      l.label = fmt::format("{} · compute", who);
      break;
    case 1:
      l.kind = LaneKind::comm;
      l.label = fmt::format("{} · comm", who);
      break;
    case 2:
      l.kind = LaneKind::optimizer;
      l.label = fmt::format("{} · optimizer", who);
      break;
    default:
      l.kind = LaneKind::gpu;
      l.gpu_stream = k.order - 3;
      l.label = fmt::format("{} · GPU stream {}", who, l.gpu_stream);
  }
  return l;
}

// Rows by nesting: an event goes one row below the events that enclose it, or
// further down when that row is still busy (a partial overlap), so no row ever
// holds two overlapping events.
void assign_rows(TimelineLane& lane, std::vector<TimelineEvent>& evs) {
  std::sort(evs.begin(), evs.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::vector<int64_t> open_ends;  // enclosing events, innermost last
  std::vector<int64_t> row_end;    // end of the last event placed in each row
  for (const TimelineEvent& e : evs) {
    while (!open_ends.empty() && open_ends.back() <= e.start_ns) open_ends.pop_back();
    size_t depth = open_ends.size();
    while (depth < row_end.size() && row_end[depth] > e.start_ns) ++depth;
    if (depth >= row_end.size()) {
      row_end.resize(depth + 1, std::numeric_limits<int64_t>::min());
      lane.rows.resize(depth + 1);
    }
    row_end[depth] = e.end_ns;
    lane.rows[depth].events.push_back(e);
    open_ends.push_back(e.end_ns);
  }
}

// Aligns the ranks' steady clocks through their epochs' wall time (when every
// rank with events has one), then puts the earliest event at 0.
void align_clocks(TimelineModel& m, const std::vector<profiler::RankInfo>& ranks, int max_rank,
                  const std::vector<char>& has_events) {
  m.rank_offset_ns.assign(size_t(max_rank + 1), 0);
  std::vector<std::optional<int64_t>> epoch(size_t(max_rank + 1));
  for (const auto& r : ranks)
    if (r.rank >= 0 && r.rank <= max_rank) epoch[size_t(r.rank)] = r.epoch_unix_ns;
  bool all_known = max_rank >= 0;
  int64_t min_epoch = std::numeric_limits<int64_t>::max();
  for (int r = 0; r <= max_rank; ++r)
    if (has_events[size_t(r)]) {
      all_known = all_known && epoch[size_t(r)].has_value();
      if (epoch[size_t(r)]) min_epoch = std::min(min_epoch, *epoch[size_t(r)]);
    }
  m.clocks_aligned = all_known;
  if (all_known)
    for (int r = 0; r <= max_rank; ++r)
      if (has_events[size_t(r)]) m.rank_offset_ns[size_t(r)] = *epoch[size_t(r)] - min_epoch;

  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Event& e : m.events) origin = std::min(origin, e.start_ns + m.rank_offset_ns[e.rank]);
  if (m.events.empty()) origin = 0;
  for (auto& off : m.rank_offset_ns) off -= origin;
}

// Names a rank's lanes: "rank 3", or "rank 3 · stage 1" in a pipeline run, so
// the stages' lanes show the 1F1B pattern.
std::function<std::string(int)> rank_names(const std::vector<profiler::RankInfo>& ranks) {
  const bool pipeline = std::any_of(
      ranks.begin(), ranks.end(), [](const profiler::RankInfo& r) { return r.pipeline_stage > 0; });
  return [&ranks, pipeline](int rank) {
    if (!pipeline) return fmt::format("rank {}", rank);
    int stage = 0;
    for (const auto& r : ranks)
      if (r.rank == rank) stage = r.pipeline_stage;
    return fmt::format("rank {} · stage {}", rank, stage);
  };
}

// The events (on the aligned clock) by lane, and the model's end.
std::map<LaneKey, std::vector<TimelineEvent>> events_by_lane(TimelineModel& m) {
  std::map<LaneKey, std::vector<TimelineEvent>> by_lane;
  for (size_t i = 0; i < m.events.size(); ++i) {
    const Event& e = m.events[i];
    const int64_t start = e.start_ns + m.rank_offset_ns[e.rank];
    const int64_t end = start + std::max<int64_t>(0, e.dur_ns);
    by_lane[lane_key(e)].push_back({start, end, uint32_t(i)});
    m.end_ns = std::max(m.end_ns, end);
  }
  return by_lane;
}

}  // namespace

const std::string& TimelineModel::name_of(const Event& e) const {
  static const std::string kUnknown = "?";
  return e.name_id < names.size() ? names[e.name_id] : kUnknown;
}

TimelineModel build_timeline(const profiler::EventSet& set,
                             const std::vector<profiler::RankInfo>& ranks,
                             std::optional<int64_t> step) {
  TimelineModel m;
  m.names = set.names;
  m.events.reserve(set.events.size());
  int max_rank = -1;
  for (const Event& e : set.events) {
    if (step && e.step != *step) continue;
    m.events.push_back(e);
    max_rank = std::max(max_rank, int(e.rank));
  }
  std::vector<char> has_events(size_t(max_rank + 1), 0);
  for (const Event& e : m.events) has_events[e.rank] = 1;
  align_clocks(m, ranks, max_rank, has_events);

  std::map<LaneKey, std::vector<TimelineEvent>> by_lane = events_by_lane(m);
  // Every rank with events shows its compute and comm lanes, even when empty, so
  // lanes line up from rank to rank; a run without collectives (an imported trace:
  // its communication is GPU kernels) shows no comm lanes.
  const bool any_comm = std::any_of(set.events.begin(), set.events.end(),
                                    [](const Event& e) { return e.lane == profiler::kLaneComm; });
  for (int r = 0; r <= max_rank; ++r)
    if (has_events[size_t(r)]) {
      by_lane[{r, 0}];
      if (any_comm) by_lane[{r, 1}];
    }
  const auto who = rank_names(ranks);
  for (auto& [key, evs] : by_lane) {
    TimelineLane lane = make_lane(key, who(key.rank));
    assign_rows(lane, evs);
    if (lane.rows.empty()) lane.rows.resize(1);
    m.lanes.push_back(std::move(lane));
  }
  return m;
}

std::vector<LaneGeometry> layout_lanes(const TimelineModel& m, float row_px, float gap_px) {
  std::vector<LaneGeometry> out;
  float y = 0;
  for (const auto& lane : m.lanes) {
    const float h = float(std::max<size_t>(1, lane.rows.size())) * row_px;
    out.push_back({y, h});
    y += h + gap_px;
  }
  return out;
}

void layout_row(const TimelineRow& row, double view_begin_ns, double view_end_ns, double ns_per_px,
                float min_px, std::vector<TimelineBox>& out) {
  const auto& evs = row.events;
  if (evs.empty() || ns_per_px <= 0) return;
  // Ends are sorted (rows never overlap): the first visible event ends after the view begins.
  auto it = std::upper_bound(evs.begin(), evs.end(), view_begin_ns,
                             [](double t, const TimelineEvent& e) { return t < double(e.end_ns); });
  size_t i = size_t(it - evs.begin());
  const double inv = 1.0 / ns_per_px;
  auto px = [&](int64_t t) { return float((double(t) - view_begin_ns) * inv); };
  while (i < evs.size() && double(evs[i].start_ns) < view_end_ns) {
    const float x0 = px(evs[i].start_ns);
    float x1 = px(evs[i].end_ns);
    if (x1 - x0 >= min_px) {
      out.push_back({x0, x1, uint32_t(i), 1});
      ++i;
      continue;
    }
    TimelineBox box{x0, x1, uint32_t(i), 1};
    ++i;
    while (i < evs.size() && double(evs[i].start_ns) < view_end_ns) {
      const float s = px(evs[i].start_ns), e = px(evs[i].end_ns);
      if (e - s >= min_px || s > std::max(box.x1, box.x0 + min_px) + min_px) break;
      box.x1 = std::max(box.x1, e);
      ++box.count;
      ++i;
    }
    box.x1 = std::max(box.x1, box.x0 + min_px);
    out.push_back(box);
  }
}

int event_at(const TimelineRow& row, double t_ns, double tolerance_ns) {
  const auto& evs = row.events;
  auto it = std::lower_bound(evs.begin(), evs.end(), t_ns - tolerance_ns,
                             [](const TimelineEvent& e, double t) { return double(e.end_ns) < t; });
  int best = -1;
  double best_dist = std::numeric_limits<double>::infinity();
  for (; it != evs.end() && double(it->start_ns) <= t_ns + tolerance_ns; ++it) {
    const double d = t_ns < double(it->start_ns) ? double(it->start_ns) - t_ns
                     : t_ns > double(it->end_ns) ? t_ns - double(it->end_ns)
                                                 : 0.0;
    if (d < best_dist) {
      best_dist = d;
      best = int(it - evs.begin());
    }
    if (d == 0) break;
  }
  return best;
}

}  // namespace hybrid::gui
