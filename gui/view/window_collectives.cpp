// Collectives: exposed against total communication per step (how much of it the
// schedule hid behind compute), and the comm table by op and message size with
// latency, algbw and busbw (nccl-tests conventions), sortable by any column.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

#include "gui/model/comm_model.h"
#include "gui/view/app.h"
#include "gui/view/plot.h"
#include "gui/view/theme.h"

namespace hybrid::gui {

namespace {

CommColumn comm_column(int col) {
  static const CommColumn map[] = {CommColumn::op,      CommColumn::bytes, CommColumn::calls,
                                   CommColumn::latency, CommColumn::min,   CommColumn::max,
                                   CommColumn::total,   CommColumn::algbw, CommColumn::busbw};
  return col >= 0 && col < 9 ? map[col] : CommColumn::op;
}

// On a GPU the step rows are the device's: exposed is communication with no computation running.
void draw_exposure(const CommSummary& s, bool gpu) {
  ImGui::Text("Communication per step: %.3f ms in flight, %.3f ms exposed (%s)", s.comm_ms_per_step,
              s.exposed_ms_per_step,
              gpu ? "no computation kernel running" : "the compute lane waited");
  ImGui::Text("Hidden behind compute: ");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(s.hidden_fraction() > 0.5 ? colors::kGood : colors::kExposed),
                     "%.1f%%", 100.0 * s.hidden_fraction());
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = std::min(600.0f, ImGui::GetContentRegionAvail().x), h = 14;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + w, p.y + h), IM_COL32(255, 255, 255, 12));
  stacked_bar(
      dl, p, ImVec2(p.x + w, p.y + h),
      {{s.exposed_ms_per_step, colors::kExposed},
       {s.comm_ms_per_step - s.exposed_ms_per_step, category_color(profiler::Category::comm)}},
      s.comm_ms_per_step);
  ImGui::Dummy(ImVec2(w, h));
  ImGui::TextColored(to_vec4(colors::kExposed), "■ exposed");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(category_color(profiler::Category::comm)), "■ hidden (overlapped)");
}

// Each stage's wait on its neighbours (send/recv) against its step.
void draw_bubbles(const CommSummary& s) {
  if (s.bubbles.empty()) return;
  section("Pipeline bubble per stage (waits on send/recv; per step, mean over the stage's ranks)");
  for (const auto& b : s.bubbles)
    ImGui::Text("stage %d: bubble %.3f ms of %.3f ms (%.1f%%)", b.stage, b.bubble_ms, b.step_ms,
                100.0 * b.fraction());
}

void draw_steps(const CommSummary& s) {
  section("Per step (mean over ranks)");
  double full = 0;
  for (const auto& r : s.steps) full = std::max(full, r.comm_ms.max);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_ScrollY;
  const float h =
      std::min(ImGui::GetTextLineHeightWithSpacing() * float(s.steps.size() + 2), 180.0f);
  if (!ImGui::BeginTable("##commsteps", 5, flags, ImVec2(0, h))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("step");
  ImGui::TableSetupColumn("in flight ms [min, max]");
  ImGui::TableSetupColumn("exposed ms [min, max]");
  ImGui::TableSetupColumn("hidden");
  ImGui::TableSetupColumn("exposed / in flight", ImGuiTableColumnFlags_WidthStretch, 3.0f);
  ImGui::TableHeadersRow();
  for (const auto& r : s.steps) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%lld", static_cast<long long>(r.step));
    ImGui::TableNextColumn();
    ImGui::Text("%.3f [%.3f, %.3f]", r.comm_ms.mean, r.comm_ms.min, r.comm_ms.max);
    ImGui::TableNextColumn();
    ImGui::Text("%.3f [%.3f, %.3f]", r.exposed_ms.mean, r.exposed_ms.min, r.exposed_ms.max);
    ImGui::TableNextColumn();
    ImGui::Text("%.1f%%",
                r.comm_ms.mean > 0 ? 100.0 * (1 - r.exposed_ms.mean / r.comm_ms.mean) : 0.0);
    ImGui::TableNextColumn();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = ImGui::GetContentRegionAvail().x, bh = ImGui::GetTextLineHeight() - 4;
    stacked_bar(ImGui::GetWindowDrawList(), ImVec2(p.x, p.y + 2), ImVec2(p.x + w, p.y + 2 + bh),
                {{r.exposed_ms.mean, colors::kExposed},
                 {r.comm_ms.mean - r.exposed_ms.mean, category_color(profiler::Category::comm)}},
                full);
    ImGui::Dummy(ImVec2(w, bh + 4));
  }
  ImGui::EndTable();
}

void draw_row(const CommRow& r) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  std::string op = r.op;
  if (r.group != "world") op += " [" + r.group + "]";  // e.g. "send [pp]"
  if (r.link == "inter_host") op += " (inter-host)";
  ImGui::TextUnformatted(op.c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format_bytes(r.bytes).c_str());
  ImGui::TableNextColumn();
  ImGui::Text("%.1f", r.calls);
  ImGui::TableNextColumn();
  ImGui::Text("%.3f [%.3f, %.3f]", r.latency_ms.mean, r.latency_ms.min, r.latency_ms.max);
  ImGui::TableNextColumn();
  ImGui::Text("%.3f", r.min_ms);
  ImGui::TableNextColumn();
  ImGui::Text("%.3f", r.max_ms);
  ImGui::TableNextColumn();
  ImGui::Text("%.3f", r.total_ms.mean);
  ImGui::TableNextColumn();
  ImGui::Text("%.2f", r.algbw_gbps);
  ImGui::TableNextColumn();
  ImGui::Text("%.2f", r.busbw_gbps);
}

// The comm table by op and message size, sorted by the column the user chose.
void draw_rows(const CommSummary& s) {
  section("Collectives by op and message size (per rank; latency [min, max] over ranks)");
  std::vector<CommRow> rows = s.rows;
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortTristate |
                                ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("##comm", 9, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("op");
  ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("calls / rank", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("latency ms [min, max]", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("fastest ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("slowest ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("total ms / rank", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("algbw GB/s", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("busbw GB/s", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableHeadersRow();
  if (const ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0)
    sort_comm_rows(rows, comm_column(specs->Specs[0].ColumnIndex),
                   specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending);
  for (const auto& r : rows) draw_row(r);
  ImGui::EndTable();
}

}  // namespace

void draw_collectives_window(App& app) {
  RunView* run = app.run();
  if (!run) {
    ImGui::TextColored(to_vec4(colors::kDimText), "No run selected.");
    return;
  }
  const CommSummary& s = run->comm;
  if (s.rows.empty() && s.steps.empty()) {
    ImGui::TextColored(to_vec4(colors::kDimText),
                       "No collectives recorded in run %lld (a single rank, or comms_logger off).",
                       static_cast<long long>(run->data.profile.run.id));
    return;
  }
  const auto& info = run->data.profile.run;
  draw_exposure(s, info.backend == "cuda");
  draw_steps(s);
  draw_bubbles(s);
  if (s.rows.empty() && info.source != "hybrid") {
    section("Collectives by op and message size");
    ImGui::TextColored(
        to_vec4(colors::kDimText),
        "An imported trace has no collective records of its own: its collectives are "
        "NCCL kernels, in the GPU window and on the timeline's GPU streams.");
    return;
  }
  draw_rows(s);
}

}  // namespace hybrid::gui
