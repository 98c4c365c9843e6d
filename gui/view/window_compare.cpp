// Compare: two runs side by side — step time (median over each run's steps) with
// the delta and speed-up, throughput, and per-layer deltas of the profiled steps,
// each with a diverging bar (red: B slower, green: B faster).
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/model/compare_model.h"
#include "gui/view/app.h"
#include "gui/view/theme.h"

namespace hybrid::gui {

namespace {

void run_combo(App& app, const char* id, RunView* current, bool compare) {
  const std::string label = current ? app.run_label(current->data.profile.run) : "(choose a run)";
  ImGui::SetNextItemWidth(440);
  if (!ImGui::BeginCombo(id, label.c_str())) return;
  const auto& runs = app.database()->runs();
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    const bool sel = current && current->data.profile.run.id == it->id;
    if (ImGui::Selectable(app.run_label(*it).c_str(), sel)) {
      if (compare)
        app.select_compare_run(it->id);
      else
        app.select_run(it->id);
    }
  }
  ImGui::EndCombo();
}

std::string opt_ms(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "-"; }

void draw_summary(const RunComparison& c) {
  const double d = c.step_delta_ms();
  const ImU32 dc = d > 0 ? colors::kError : colors::kGood;
  ImGui::Text("Step time (median): A %.2f ms · B %.2f ms ·", c.a_median_step_ms,
              c.b_median_step_ms);
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(dc), "Δ %+.2f ms (%+.1f%%)", d,
                     100.0 * c.step_delta_fraction().value_or(0));
  ImGui::SameLine();
  if (auto s = c.speedup())
    ImGui::Text("· B is %.2f× %s", *s >= 1 ? *s : 1 / *s, *s >= 1 ? "faster" : "slower");
  ImGui::Text(
      "Throughput (median): A %.0f tokens/s · B %.0f tokens/s · profiled step: A %.2f ms · B %.2f "
      "ms",
      c.a_tokens_per_s, c.b_tokens_per_s, c.a_profiled_step_ms, c.b_profiled_step_ms);
}

// The diverging bar of a row's delta, scaled to the largest delta.
void delta_bar(double delta_ms, double scale) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = std::max(60.0f, ImGui::GetContentRegionAvail().x), h = ImGui::GetTextLineHeight();
  const float mid = p.x + w / 2;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddLine(ImVec2(mid, p.y), ImVec2(mid, p.y + h), colors::kAxis);
  if (scale > 0) {
    const float len = float(delta_ms / scale) * (w / 2 - 2);
    dl->AddRectFilled(ImVec2(std::min(mid, mid + len), p.y + 3),
                      ImVec2(std::max(mid, mid + len), p.y + h - 3),
                      delta_ms > 0 ? colors::kError : colors::kGood);
  }
  ImGui::Dummy(ImVec2(w, h));
}

void draw_row(const CompareRow& r, double scale) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  if (r.depth > 0) ImGui::Indent(float(r.depth) * 12);  // Indent(0) would indent by the default
  ImGui::TextUnformatted(r.name.c_str());
  if (r.depth > 0) ImGui::Unindent(float(r.depth) * 12);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(opt_ms(r.a_ms).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(opt_ms(r.b_ms).c_str());
  ImGui::TableNextColumn();
  ImGui::TextColored(to_vec4(r.delta_ms() > 0 ? colors::kError : colors::kGood), "%+.3f",
                     r.delta_ms());
  ImGui::TableNextColumn();
  if (auto f = r.delta_fraction())
    ImGui::Text("%+.1f%%", 100.0 * *f);
  else
    ImGui::TextUnformatted("-");
  ImGui::TableNextColumn();
  ImGui::Text("%s", r.a_share ? fmt::format("{:.1f}%", 100 * *r.a_share).c_str() : "-");
  ImGui::TableNextColumn();
  ImGui::Text("%s", r.b_share ? fmt::format("{:.1f}%", 100 * *r.b_share).c_str() : "-");
  ImGui::TableNextColumn();
  delta_bar(r.delta_ms(), scale);
}

}  // namespace

void draw_compare_window(App& app) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("A");
  ImGui::SameLine();
  run_combo(app, "##a", app.run(), false);
  ImGui::SameLine();
  ImGui::TextUnformatted("B");
  ImGui::SameLine();
  run_combo(app, "##b", app.compare_run(), true);
  RunView* a = app.run();
  RunView* b = app.compare_run();
  if (!a || !b) {
    ImGui::TextColored(to_vec4(colors::kDimText), "Choose two runs to compare.");
    return;
  }
  const RunComparison c = compare_runs(a->data.profile, a->layers, b->data.profile, b->layers);
  draw_summary(c);
  double scale = 0;
  for (const auto& r : c.rows) scale = std::max(scale, std::fabs(r.delta_ms()));
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("##cmp", 8, flags)) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("module", 0, 230);
  for (const char* name : {"A ms", "B ms", "Δ ms", "Δ %", "A share", "B share"})
    ImGui::TableSetupColumn(name);
  ImGui::TableSetupColumn("Δ (red: B slower)", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (const auto& r : c.rows)
    if (r.depth <= 1 || r.kind != LayerRowKind::module)  // blocks and above: the tree is in Layers
      draw_row(r, scale);
  ImGui::EndTable();
}

}  // namespace hybrid::gui
