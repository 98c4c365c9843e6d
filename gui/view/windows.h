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

namespace hybrid::gui {

class SweepsWindow {
 public:
  void draw(App& app);

 private:
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
  void draw_table(App& app, RunView& run);
  std::unordered_set<std::string> expanded_ = {"model"};
};

class TimelineWindow {
 public:
  void draw(App& app);
  // Draws only the lanes canvas of `model` in the given size (the benchmark's frame).
  void draw_canvas(App* app, const TimelineModel& model, ImVec2 size);
  void fit(const TimelineModel& model);
  size_t boxes_drawn() const { return boxes_drawn_; }

 private:
  double view_begin_ns_ = 0;
  double view_end_ns_ = 0;
  bool fitted_ = false;
  const void* fitted_for_ = nullptr;
  size_t boxes_drawn_ = 0;
  std::vector<TimelineBox> scratch_;
};

}  // namespace hybrid::gui
