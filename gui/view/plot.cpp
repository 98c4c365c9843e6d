#include "gui/view/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gui/view/theme.h"

namespace hybrid::gui {

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || target < 1) return out;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

std::string short_number(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.4g}", v);
}

namespace {

struct Frame {
  ImVec2 min, max;  // plot area (inside the axes)
  double x0, x1, y0, y1;
  bool log_y = false;
  float px(double x) const { return min.x + float((x - x0) / (x1 - x0)) * (max.x - min.x); }
  float py(double y) const {
    const double v = log_y ? std::log2(std::max(y, 1e-300)) : y;
    return max.y - float((v - y0) / (y1 - y0)) * (max.y - min.y);
  }
  double x_at(float px_) const {
    return x0 + double(px_ - min.x) / double(max.x - min.x) * (x1 - x0);
  }
};

void expand_range(double& lo, double& hi) {
  if (!(hi > lo)) {
    const double pad = std::fabs(lo) > 0 ? std::fabs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
}

// Draws the title, the frame, grid lines and tick labels; returns the plot area.
Frame draw_axes(ImDrawList* dl, ImVec2 origin, ImVec2 size, const PlotOptions& o, double x0,
                double x1, double y0, double y1, bool log2_x = false) {
  Frame f;
  const float title_h = o.title.empty() ? 0 : ImGui::GetTextLineHeight() + 4;
  const float left = 52, bottom = ImGui::GetTextLineHeight() + 6;
  f.min = ImVec2(origin.x + left, origin.y + title_h + 4);
  f.max = ImVec2(origin.x + size.x - 8, origin.y + size.y - bottom);
  f.x0 = x0;
  f.x1 = x1;
  f.y0 = y0;
  f.y1 = y1;
  f.log_y = o.log_y;
  if (!o.title.empty()) dl->AddText(ImVec2(origin.x + 4, origin.y), colors::kText, o.title.c_str());
  dl->AddRectFilled(f.min, f.max, IM_COL32(255, 255, 255, 6));
  for (double t : nice_ticks(y0, y1, 4)) {
    const float y = f.max.y - float((t - y0) / (y1 - y0)) * (f.max.y - f.min.y);
    dl->AddLine(ImVec2(f.min.x, y), ImVec2(f.max.x, y), colors::kGrid);
    const std::string label = o.log_y ? short_number(std::exp2(t)) : short_number(t);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(f.min.x - ts.x - 4, y - ts.y / 2), colors::kDimText, label.c_str());
  }
  for (double t : nice_ticks(x0, x1, 6)) {
    if ((o.integer_x || log2_x) && t != std::floor(t)) continue;  // steps; powers of two
    const float x = f.px(t);
    dl->AddLine(ImVec2(x, f.min.y), ImVec2(x, f.max.y), colors::kGrid);
    const std::string label = log2_x ? short_number(std::exp2(t)) : short_number(t);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(x - ts.x / 2, f.max.y + 3), colors::kDimText, label.c_str());
  }
  dl->AddRect(f.min, f.max, colors::kAxis);
  return f;
}

}  // namespace

namespace {

// Each series as polylines broken at values the axis cannot show.
void draw_series(ImDrawList* dl, const Frame& f, const std::vector<PlotSeries>& series,
                 const PlotOptions& o) {
  for (const auto& s : series) {
    std::vector<ImVec2> run;
    auto flush = [&] {
      if (run.size() >= 2) dl->AddPolyline(run.data(), int(run.size()), s.color, 0, 2.0f);
      if (run.size() == 1) dl->AddCircleFilled(run[0], 2.5f, s.color);
      run.clear();
    };
    for (size_t i = 0; i < s.x->size() && i < s.y->size(); ++i) {
      const double y = (*s.y)[i];
      if (!std::isfinite(y) || (o.log_y && y <= 0)) {
        flush();
        continue;
      }
      run.emplace_back(f.px((*s.x)[i]), f.py(y));
    }
    flush();
  }
}

// The nearest point of each series to the mouse, and markers near it.
void line_tooltip(ImDrawList* dl, const Frame& f, const std::vector<PlotSeries>& series,
                  const PlotOptions& o) {
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const double xm = f.x_at(mouse.x);
  dl->AddLine(ImVec2(mouse.x, f.min.y), ImVec2(mouse.x, f.max.y), colors::kAxis);
  ImGui::BeginTooltip();
  for (const auto& s : series) {
    size_t best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < s.x->size(); ++i)
      if (std::fabs((*s.x)[i] - xm) < best_d) {
        best_d = std::fabs((*s.x)[i] - xm);
        best = i;
      }
    if (best < s.y->size())
      ImGui::TextColored(to_vec4(s.color), "step %.0f  %s: %s %s", (*s.x)[best], s.label.c_str(),
                         short_number((*s.y)[best]).c_str(), o.unit.c_str());
  }
  for (double m : o.markers_x)
    if (std::fabs(m - xm) < (f.x1 - f.x0) / 60)
      ImGui::TextColored(to_vec4(o.marker_color), "step %.0f: %s", m, o.marker_label.c_str());
  ImGui::EndTooltip();
}

}  // namespace

void line_plot(const char* id, const std::vector<PlotSeries>& series, const PlotOptions& o) {
  ImGui::PushID(id);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 size(std::max(ImGui::GetContentRegionAvail().x, 120.0f), o.height);
  ImGui::InvisibleButton("##plot", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();

  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series)
    for (size_t i = 0; i < s.x->size() && i < s.y->size(); ++i) {
      double y = (*s.y)[i];
      if (!std::isfinite(y) || (o.log_y && y <= 0)) continue;
      if (o.log_y) y = std::log2(y);
      x0 = std::min(x0, (*s.x)[i]);
      x1 = std::max(x1, (*s.x)[i]);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  if (!std::isfinite(x0)) {
    dl->AddText(origin, colors::kDimText, (o.title + ": no data").c_str());
    ImGui::PopID();
    return;
  }
  if (o.y_from_zero && !o.log_y) y0 = std::min(y0, 0.0);
  expand_range(x0, x1);
  expand_range(y0, y1);
  const double pad = (y1 - y0) * 0.06;
  y1 += pad;
  if (!(o.y_from_zero && y0 == 0)) y0 -= pad;
  const Frame f = draw_axes(dl, origin, size, o, x0, x1, y0, y1);
  dl->PushClipRect(f.min, f.max, true);
  for (double m : o.markers_x) {
    const float x = f.px(m);
    dl->AddLine(ImVec2(x, f.min.y), ImVec2(x, f.max.y), o.marker_color, 1.5f);
  }
  draw_series(dl, f, series, o);
  dl->PopClipRect();
  // Legend, top right.
  float lx = f.max.x - 6;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    const ImVec2 ts = ImGui::CalcTextSize(it->label.c_str());
    lx -= ts.x;
    dl->AddText(ImVec2(lx, f.min.y + 3), it->color, it->label.c_str());
    lx -= 14;
  }
  if (hovered) line_tooltip(dl, f, series, o);
  ImGui::PopID();
}

int scatter_plot(const char* id, const std::vector<ScatterDot>& dots, const PlotOptions& o,
                 const std::string& x_label, bool log2_x) {
  ImGui::PushID(id);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 size(std::max(ImGui::GetContentRegionAvail().x, 120.0f), o.height);
  ImGui::InvisibleButton("##scatter", size);
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  auto xv = [&](double x) { return log2_x ? std::log2(std::max(x, 1e-9)) : x; };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& d : dots) {
    x0 = std::min(x0, xv(d.x));
    x1 = std::max(x1, xv(d.x));
    y0 = std::min(y0, d.y);
    y1 = std::max(y1, d.y);
  }
  if (dots.empty()) {
    dl->AddText(origin, colors::kDimText, (o.title + ": no finished trials yet").c_str());
    ImGui::PopID();
    return -1;
  }
  expand_range(x0, x1);
  const double xpad = (x1 - x0) * 0.08;
  x0 -= xpad;
  x1 += xpad;
  y0 = std::min(y0, 0.0);
  expand_range(y0, y1);
  y1 += (y1 - y0) * 0.08;
  const Frame f = draw_axes(dl, origin, size, o, x0, x1, y0, y1, log2_x);
  const ImVec2 xs = ImGui::CalcTextSize(x_label.c_str());
  dl->AddText(ImVec2(f.max.x - xs.x, f.max.y - xs.y - 2), colors::kDimText, x_label.c_str());
  int hit = -1;
  float hit_d = 64;  // squared px
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (size_t i = 0; i < dots.size(); ++i) {
    const ImVec2 p(f.px(xv(dots[i].x)), f.py(dots[i].y));
    const float r = dots[i].emphasised ? 6.0f : 4.5f;
    dl->AddCircleFilled(p, r, dots[i].color);
    if (dots[i].emphasised) dl->AddCircle(p, r + 3, colors::kHighlight, 0, 2.0f);
    const float dx = p.x - mouse.x, dy = p.y - mouse.y;
    if (hovered && dx * dx + dy * dy < hit_d) {
      hit_d = dx * dx + dy * dy;
      hit = int(i);
    }
  }
  if (hit >= 0) ImGui::SetTooltip("%s", dots[size_t(hit)].tooltip.c_str());
  ImGui::PopID();
  return clicked ? hit : -1;
}

void stacked_bar(ImDrawList* dl, ImVec2 min, ImVec2 max, const std::vector<BarPart>& parts,
                 double full) {
  if (full <= 0) return;
  const float w = max.x - min.x;
  float x = min.x;
  for (const auto& p : parts) {
    if (p.value <= 0) continue;
    const float dx = float(p.value / full) * w;
    const float x1 = std::min(max.x, x + std::max(dx, 1.0f));
    dl->AddRectFilled(ImVec2(x, min.y), ImVec2(x1, max.y), p.color);
    x = x1;
    if (x >= max.x) break;
  }
}

}  // namespace hybrid::gui
