// Plots drawn with ImDrawList (ImPlot is not packaged): line plots with axes and
// a hover read-out, a scatter plot, and the stacked horizontal bar of the tables.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

namespace hybrid::gui {

struct PlotSeries {
  const std::vector<double>* x = nullptr;
  const std::vector<double>* y = nullptr;  // NaN leaves a gap
  ImU32 color = 0;
  std::string label;
};

struct PlotOptions {
  std::string title;
  std::string unit;               // appended to the hover read-out
  bool log_y = false;             // loss scale spans powers of two
  bool y_from_zero = false;       // throughput and times read better from 0
  bool integer_x = true;          // steps: no ticks between them
  std::vector<double> markers_x;  // vertical marks (skipped steps)
  ImU32 marker_color = 0;
  std::string marker_label;
  float height = 180;
};

void line_plot(const char* id, const std::vector<PlotSeries>& series, const PlotOptions& options);

struct ScatterDot {
  double x = 0;
  double y = 0;
  ImU32 color = 0;
  std::string tooltip;
  bool emphasised = false;  // drawn larger with a ring (the best trial)
};
// Returns the index of the clicked dot, or -1.
int scatter_plot(const char* id, const std::vector<ScatterDot>& dots, const PlotOptions& options,
                 const std::string& x_label, bool log2_x);

struct BarPart {
  double value = 0;
  ImU32 color = 0;
};
// Parts side by side from the left of [min, max]; full width = `full` (same unit).
void stacked_bar(ImDrawList* dl, ImVec2 min, ImVec2 max, const std::vector<BarPart>& parts,
                 double full);

// Tick values covering [lo, hi] at a 1-2-5 step, about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);
// "1.5k", "250", "0.25", "2M": short labels for axes.
std::string short_number(double v);

}  // namespace hybrid::gui
