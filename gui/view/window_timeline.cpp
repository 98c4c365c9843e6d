// Step timeline: lanes per rank (compute, comm, optimizer, GPU streams), nested
// scopes in rows, zoom with the wheel around the mouse, pan by dragging, fit with
// a double click; tooltips with name, duration, bytes and FLOPs; the selected
// module's events highlighted. Level of detail: layout_row merges sub-pixel events,
// so a frame draws at most a few boxes per pixel column whatever the event count.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/view/plot.h"
#include "gui/view/theme.h"
#include "gui/view/windows.h"
#include "profiler/gpu_timeline.h"
#include "profiler/tables/step_accounting.h"

namespace hybrid::gui {

namespace {

using profiler::is_comm_wait;

constexpr float kLabelWidth = 170;
constexpr float kRulerHeight = 22;
constexpr float kLaneGap = 6;

// GPU records by what they do: communication kernels as collectives, copies as memcpy.
ImU32 event_color(const TimelineModel& m, const profiler::Event& e) {
  if (e.category == profiler::Category::kernel &&
      profiler::classify_gpu_record(e.category, m.name_of(e)) == profiler::GpuWork::communication)
    return colors::kGpuComm;
  return is_comm_wait(e) ? colors::kExposed : category_color(e.category);
}

// Opaque mixes with the window background (the boxes are drawn without blending).
ImU32 mix_bg(ImU32 c, float keep) {
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  const ImVec4 v = ImGui::ColorConvertU32ToFloat4(c);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(v.x * keep + bg.x * (1 - keep),
                                               v.y * keep + bg.y * (1 - keep),
                                               v.z * keep + bg.z * (1 - keep), 1));
}

std::string time_label(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.3g} s", ns * 1e-9);
  if (a >= 1e6) return fmt::format("{:.4g} ms", ns * 1e-6);
  if (a >= 1e3) return fmt::format("{:.4g} us", ns * 1e-3);
  return fmt::format("{:.0f} ns", ns);
}

// The step filter: all profiled steps or one; true when the choice changed (the
// timeline was rebuilt).
bool draw_step_filter(RunView& run) {
  bool changed = false;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Steps");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(140);
  const std::string label =
      run.timeline_step ? fmt::format("step {}", *run.timeline_step) : "all profiled";
  if (ImGui::BeginCombo("##tlstep", label.c_str())) {
    if (ImGui::Selectable("all profiled", !run.timeline_step)) {
      run.timeline_step.reset();
      run.rebuild_timeline();
      changed = true;
    }
    for (int64_t s : run.layers.profiled_steps)
      if (ImGui::Selectable(fmt::format("step {}", s).c_str(), run.timeline_step == s)) {
        run.timeline_step = s;
        run.rebuild_timeline();
        changed = true;
      }
    ImGui::EndCombo();
  }
  return changed;
}

// What the colours mean, and how to move around.
void draw_legend() {
  for (auto [c, name] : {std::pair{profiler::Category::forward, "forward"},
                         {profiler::Category::backward, "backward"},
                         {profiler::Category::recompute, "recompute"},
                         {profiler::Category::optimizer, "optimizer"},
                         {profiler::Category::comm, "collective"},
                         {profiler::Category::data, "data"},
                         {profiler::Category::kernel, "GPU kernel"},
                         {profiler::Category::memcpy, "GPU memcpy/memset"},
                         {profiler::Category::prefill, "prefill"},
                         {profiler::Category::decode, "decode step"}}) {
    ImGui::TextColored(to_vec4(category_color(c)), "■ %s", name);
    ImGui::SameLine();
  }
  ImGui::TextColored(to_vec4(colors::kGpuComm), "■ GPU comm kernel");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(colors::kExposed), "■ comm wait (exposed)");
  ImGui::TextColored(to_vec4(colors::kDimText),
                     "wheel: zoom · drag: pan · double-click: fit · click: highlight a module");
}

}  // namespace

void TimelineWindow::fit(const TimelineModel& m) {
  const double span = std::max<double>(double(m.end_ns), 1000.0);
  view_begin_ns_ = -0.01 * span;
  view_end_ns_ = span * 1.01;
  fitted_ = true;
  fitted_for_ = &m;
}

void TimelineWindow::draw(App& app) {
  RunView* run = app.run();
  if (!run) {
    ImGui::TextColored(to_vec4(colors::kDimText), "No run selected.");
    return;
  }
  TimelineModel& m = run->timeline;
  if (draw_step_filter(*run)) fitted_ = false;
  ImGui::SameLine();
  if (ImGui::Button("Fit")) fitted_ = false;
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(colors::kDimText), "%zu events · showing %s of %s · %zu boxes drawn%s",
                     m.event_count(), time_label(view_end_ns_ - view_begin_ns_).c_str(),
                     time_label(double(m.end_ns)).c_str(), boxes_drawn_,
                     m.clocks_aligned ? "" : " · rank clocks not aligned");
  if (app.selected_module >= 0) {
    ImGui::SameLine();
    ImGui::TextColored(to_vec4(colors::kHighlight), "highlight: %s",
                       app.selected_module_name.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("clear")) app.select_module(-1, "");
  }
  draw_legend();
  if (m.events.empty()) {
    ImGui::TextColored(to_vec4(colors::kDimText),
                       "This run has no events: profiled steps record them (flops_profiler).");
    return;
  }
  draw_canvas(&app, m, ImGui::GetContentRegionAvail());
}

// Zoom around the mouse, pan by dragging, fit on double click.
void TimelineWindow::handle_input(const TimelineModel& m, CanvasFrame& f) {
  if (!f.hovered) return;
  const ImGuiIO& io = ImGui::GetIO();
  const double t_mouse = view_begin_ns_ + double(io.MousePos.x - f.x0) * f.ns_per_px;
  if (io.MouseWheel != 0) {
    const double factor = std::pow(1.25, -double(io.MouseWheel));
    const double span = std::clamp((view_end_ns_ - view_begin_ns_) * factor, 100.0,
                                   std::max(1e3, double(m.end_ns) * 4));
    const double frac = (t_mouse - view_begin_ns_) / (view_end_ns_ - view_begin_ns_);
    view_begin_ns_ = t_mouse - frac * span;
    view_end_ns_ = view_begin_ns_ + span;
  }
  if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
    const double d = double(io.MouseDelta.x) * f.ns_per_px;
    view_begin_ns_ -= d;
    view_end_ns_ -= d;
  }
  if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) fit(m);
  f.ns_per_px = (view_end_ns_ - view_begin_ns_) / double(f.x1 - f.x0);
}

void TimelineWindow::draw_ruler(ImDrawList* dl, const CanvasFrame& f) const {
  const ImVec2 o = f.origin;
  dl->AddRectFilled(o, ImVec2(f.x1, o.y + kRulerHeight), IM_COL32(255, 255, 255, 10));
  dl->PushClipRect(ImVec2(f.x0, o.y), ImVec2(f.x1, f.bottom), true);
  for (double t : nice_ticks(view_begin_ns_, view_end_ns_, 8)) {
    const float x = f.x0 + float((t - view_begin_ns_) / f.ns_per_px);
    dl->AddLine(ImVec2(x, o.y + kRulerHeight - 6), ImVec2(x, f.bottom), colors::kGrid);
    dl->AddText(ImVec2(x + 3, o.y + 3), colors::kDimText, time_label(t).c_str());
  }
  dl->PopClipRect();
}

// Lane backgrounds, separators and names. Labels are clipped on the CPU: with
// Mesa's software rasteriser every extra draw command (a clip change) costs more
// than the glyphs it would save.
void TimelineWindow::draw_lane_labels(ImDrawList* dl, const TimelineModel& m,
                                      const CanvasFrame& f) const {
  for (size_t li = 0; li < m.lanes.size(); ++li) {
    const float ly = f.top + f.lanes[li].y, h = f.lanes[li].height;
    if (ly > f.bottom) break;
    if (li % 2 == 0)
      dl->AddRectFilled(ImVec2(f.origin.x, ly), ImVec2(f.x0, ly + h), IM_COL32(255, 255, 255, 10));
    dl->AddLine(ImVec2(f.origin.x, ly + h + kLaneGap / 2), ImVec2(f.x1, ly + h + kLaneGap / 2),
                colors::kGrid);
    const ImVec4 clip(f.origin.x, ly, f.x0 - 4, ly + h);
    dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(f.origin.x + 4, ly + 1),
                colors::kText, m.lanes[li].label.c_str(), nullptr, 0.0f, &clip);
  }
}

// One row's boxes into boxes_ and labels_; the box under the mouse into `hover`.
void TimelineWindow::draw_row(const TimelineModel& m, const TimelineRow& row, float ry0,
                              const CanvasFrame& f, CanvasHover& hover) {
  const float ry1 = ry0 + f.row_px - 1;
  scratch_.clear();
  layout_row(row, view_begin_ns_, view_end_ns_, f.ns_per_px, min_px_, scratch_);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool mouse_in_row = f.hovered && mouse.y >= ry0 && mouse.y < ry1 && mouse.x >= f.x0;
  const bool highlight = f.selected_module >= 0;
  for (const TimelineBox& b : scratch_) {
    const profiler::Event& e = m.events[row.events[b.first].source];
    ImU32 c = event_color(m, e);
    if (b.count > 1) c = mix_bg(c, 0.7f);  // merged: darker
    const bool is_sel = highlight && e.module_id == f.selected_module && b.count == 1;
    if (highlight && !is_sel) c = mix_bg(c, 0.3f);
    const ImVec2 a(std::max(f.x0 + b.x0, f.x0 - 2), ry0), z(std::min(f.x0 + b.x1, f.x1 + 2), ry1);
    boxes_.add(a, z, c);
    if ((b.count == 1 && z.x - a.x > 40 && f.row_px >= 12) || is_sel)
      labels_.push_back({a, z, &m.name_of(e), is_sel});
    if (mouse_in_row && mouse.x >= f.x0 + b.x0 - 1 && mouse.x <= f.x0 + b.x1 + 1)
      hover = {&row, int(b.count), int(b.first)};
    ++boxes_drawn_;
  }
}

TimelineWindow::CanvasHover TimelineWindow::draw_boxes(ImDrawList* dl, const TimelineModel& m,
                                                       const CanvasFrame& f) {
  CanvasHover hover;
  boxes_drawn_ = 0;
  labels_.clear();
  boxes_.clear();
  dl->PushClipRect(ImVec2(f.x0, f.top), ImVec2(f.x1, f.bottom), true);
  for (size_t li = 0; li < m.lanes.size(); ++li) {
    const float ly = f.top + f.lanes[li].y;
    if (ly > f.bottom) break;
    for (size_t d = 0; d < m.lanes[li].rows.size(); ++d)
      draw_row(m, m.lanes[li].rows[d], ly + float(d) * f.row_px, f, hover);
  }
  boxes_.submit(dl);
  // Names and outlines blend over the boxes.
  ImFont* font = ImGui::GetFont();
  const float font_px = ImGui::GetFontSize();
  for (const Label& l : labels_) {
    if (l.selected) dl->AddRect(l.a, l.z, colors::kHighlight, 0, 0, 2.0f);
    if (l.z.x - l.a.x <= 40 || f.row_px < 12) continue;
    const ImVec4 clip(l.a.x, l.a.y, l.z.x - 2, l.z.y);
    dl->AddText(font, font_px, ImVec2(l.a.x + 3, l.a.y + (f.row_px - font_px) / 2 - 1),
                IM_COL32(15, 15, 20, 255), l.name->c_str(), nullptr, 0.0f, &clip);
  }
  dl->PopClipRect();
  return hover;
}

namespace {

void event_tooltip(const TimelineModel& m, const TimelineEvent& te, int box_count) {
  const profiler::Event& e = m.events[te.source];
  ImGui::BeginTooltip();
  if (box_count > 1) {
    ImGui::Text("%d events merged at this zoom (zoom in to separate them)", box_count);
    ImGui::Separator();
    ImGui::TextColored(to_vec4(colors::kDimText), "first:");
  }
  ImGui::TextColored(to_vec4(event_color(m, e)), "%s", m.name_of(e).c_str());
  ImGui::Text("%s%s · rank %d · step %d", std::string(profiler::category_name(e.category)).c_str(),
              is_comm_wait(e) ? " (wait: exposed)" : "", int(e.rank), int(e.step));
  ImGui::Text("duration %s · at %s", time_label(double(e.dur_ns)).c_str(),
              time_label(double(te.start_ns)).c_str());
  if (e.bytes) ImGui::Text("bytes %s", format_bytes(e.bytes).c_str());
  if (e.flops)
    ImGui::Text(
        "FLOPs %s (%s)", format_flop(double(e.flops)).c_str(),
        e.dur_ns > 0 ? format_flop_rate(double(e.flops) / (double(e.dur_ns) * 1e-9)).c_str() : "-");
  if (e.module_id >= 0)
    ImGui::TextColored(to_vec4(colors::kDimText), "module #%d (click to highlight)", e.module_id);
  ImGui::EndTooltip();
}

}  // namespace

void TimelineWindow::draw_canvas(App* app, const TimelineModel& m, ImVec2 size) {
  if (!fitted_ || fitted_for_ != &m) fit(m);
  size.x = std::max(size.x, kLabelWidth + 100);
  size.y = std::max(size.y, 80.0f);
  CanvasFrame f;
  f.origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##timeline", size);
  f.hovered = ImGui::IsItemHovered();
  // A click that did not drag (dragging pans).
  const bool clicked = f.hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
                       ImGui::GetIO().MouseDragMaxDistanceSqr[0] < 9.0f;
  f.x0 = f.origin.x + kLabelWidth;
  f.x1 = f.origin.x + size.x;
  f.top = f.origin.y + kRulerHeight + 2;
  f.bottom = f.origin.y + size.y;
  f.ns_per_px = (view_end_ns_ - view_begin_ns_) / double(f.x1 - f.x0);
  f.selected_module = app ? app->selected_module : -1;
  handle_input(m, f);
  // Rows share the height; each lane at least one row.
  size_t total_rows = 0;
  for (const auto& l : m.lanes) total_rows += std::max<size_t>(1, l.rows.size());
  const float avail = size.y - kRulerHeight - kLaneGap * float(m.lanes.size());
  f.row_px = std::clamp(avail / float(std::max<size_t>(1, total_rows)), 6.0f, 22.0f);
  f.lanes = layout_lanes(m, f.row_px, kLaneGap);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  draw_ruler(dl, f);
  draw_lane_labels(dl, m, f);
  const CanvasHover hover = draw_boxes(dl, m, f);
  if (!hover.row || hover.event < 0) return;
  const TimelineEvent& te = hover.row->events[size_t(hover.event)];
  event_tooltip(m, te, hover.box_count);
  const profiler::Event& e = m.events[te.source];
  if (app && clicked && e.module_id >= 0 && hover.box_count == 1)
    app->select_module(e.module_id, m.name_of(e));
}

}  // namespace hybrid::gui
