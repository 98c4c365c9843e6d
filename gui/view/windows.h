// The windows that keep state between frames (sort order, filter, expanded tree
// nodes, zoom): one class each, in its own file.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "gui/model/layer_breakdown.h"
#include "gui/model/sweep_model.h"
#include "gui/model/timeline_model.h"
#include "gui/view/app.h"
#include "gui/view/box_renderer.h"

namespace hybrid::gui {

class SweepsWindow {
 public:
  void draw(App& app);

 private:
  void choose_sweep(App& app);  // and rebuilds the table when the store changed
  void draw_header(App& app);   // sweep choice, counts, filter, best trial
  void draw_trials(App& app);   // the leaderboard
  void draw_scatter(App& app);
  void draw_pruned();
  int64_t sweep_id_ = -1;
  SweepFilter filter_;
  SweepTable table_;
  int64_t table_generation_ = -1;
  int64_t table_sweep_ = -1;
};

class LayersWindow {
 public:
  void draw(App& app);

 private:
  void draw_controls(RunView& run);  // step and rank choice, expand / collapse
  void draw_table(App& app, RunView& run);
  void draw_row(App& app, const LayerBreakdown& b, int row);
  void draw_name_cell(App& app, const LayerBreakdown& b, int row);  // the tree node
  // The model and its first block open: the tree's shape shows at a glance.
  std::unordered_set<std::string> expanded_ = {"model", "h.0"};
  int64_t shown_run_ = -1;
};

class TimelineWindow {
 public:
  void draw(App& app);
  // Draws only the lanes canvas of `model` in the given size (the benchmark's frame).
  void draw_canvas(App* app, const TimelineModel& model, ImVec2 size);
  void fit(const TimelineModel& model);
  // The visible time window (aligned ns); the next draw_canvas keeps it.
  void set_view(const TimelineModel& model, double begin_ns, double end_ns) {
    fit(model);
    view_begin_ns_ = begin_ns;
    view_end_ns_ = end_ns;
  }
  // Narrowest box in pixels; events below it merge (0: no merging, every event drawn).
  void set_min_px(float px) { min_px_ = px; }
  size_t boxes_drawn() const { return boxes_drawn_; }

 private:
  // One draw_canvas call's geometry (screen pixels) and state.
  struct CanvasFrame {
    ImVec2 origin;
    float x0 = 0, x1 = 0;       // the tracks' left and right edges (labels left of x0)
    float top = 0, bottom = 0;  // the lanes' area
    float row_px = 0;
    double ns_per_px = 1;
    bool hovered = false;
    int32_t selected_module = -1;  // highlighted module, -1: none
    std::vector<LaneGeometry> lanes;
  };
  struct CanvasHover {  // the box under the mouse
    const TimelineRow* row = nullptr;
    int box_count = 0;
    int event = -1;
  };
  void handle_input(const TimelineModel& m, CanvasFrame& f);
  void draw_ruler(ImDrawList* dl, const CanvasFrame& f) const;
  void draw_lane_labels(ImDrawList* dl, const TimelineModel& m, const CanvasFrame& f) const;
  CanvasHover draw_boxes(ImDrawList* dl, const TimelineModel& m, const CanvasFrame& f);
  void draw_row(const TimelineModel& m, const TimelineRow& row, float ry0, const CanvasFrame& f,
                CanvasHover& hover);

  double view_begin_ns_ = 0;
  double view_end_ns_ = 0;
  bool fitted_ = false;
  const void* fitted_for_ = nullptr;
  size_t boxes_drawn_ = 0;
  float min_px_ =
      3.0f;  // events narrower than this merge (a few pixels cannot be told apart anyway)
  std::vector<TimelineBox> scratch_;
  struct Label {
    ImVec2 a, z;
    const std::string* name;
    bool selected;
  };
  std::vector<Label> labels_;
  BoxRenderer boxes_;
};

class GpuWindow {
 public:
  void draw(App& app);

 private:
  int top_rank_index_ = 0;  // whose top kernels are listed (index into GpuSummary::ranks)
};

}  // namespace hybrid::gui
