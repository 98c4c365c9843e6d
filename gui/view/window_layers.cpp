// Layer breakdown: one row per module (a collapsible tree), forward / backward /
// exposed-comm times with their spread over ranks, share of the step with a
// stacked bar, FLOPs, achieved FLOP/s, parameters and activation memory; sortable
// by any column; a click selects the module, which the timeline highlights.
#include <fmt/format.h>
#include <imgui.h>

#include <cmath>

#include "gui/view/plot.h"
#include "gui/view/theme.h"
#include "gui/view/windows.h"
#include "profiler/report_format.h"

namespace hybrid::gui {

namespace {

using profiler::report::format_bytes;
using profiler::report::format_count;
using profiler::report::format_flop;
using profiler::report::format_flop_rate;

enum Col { kName, kType, kFwd, kBwd, kExposed, kTotal, kRanks, kShare, kBar, kFlops, kRate, kParams, kActs, kCols };

LayerColumn sort_column(int col) {
  switch (col) {
    case kName: return LayerColumn::name;
    case kFwd: return LayerColumn::fwd;
    case kBwd: return LayerColumn::bwd;
    case kExposed: return LayerColumn::exposed;
    case kTotal: case kRanks: case kBar: return LayerColumn::total;
    case kShare: return LayerColumn::share;
    case kFlops: return LayerColumn::flops;
    case kRate: return LayerColumn::flops_per_s;
    case kParams: return LayerColumn::params;
    case kActs: return LayerColumn::activations;
    default: return LayerColumn::tree;
  }
}

std::string ms(double v) { return fmt::format("{:.3f}", v); }

void legend_item(ImU32 color, const char* label) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 3), ImVec2(p.x + h - 6, p.y + h - 3), color);
  ImGui::Dummy(ImVec2(h - 4, h));
  ImGui::SameLine();
  ImGui::TextUnformatted(label);
  ImGui::SameLine(0, 16);
}

}  // namespace

void LayersWindow::draw(App& app) {
  RunView* run = app.run();
  if (!run) {
    ImGui::TextColored(to_vec4(colors::kDimText), "No run selected.");
    return;
  }
  LayerBreakdown& b = run->layers;
  if (b.step < 0) {
    ImGui::TextColored(to_vec4(colors::kDimText),
                       "Run %lld has no layer profile: enable \"flops_profiler\" in the config "
                       "(profile_step) to record one.",
                       static_cast<long long>(run->data.profile.run.id));
    return;
  }
  // Step and rank selectors.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Profiled step");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  if (ImGui::BeginCombo("##step", std::to_string(b.step).c_str())) {
    for (int64_t s : b.profiled_steps)
      if (ImGui::Selectable(std::to_string(s).c_str(), s == b.step)) {
        run->layer_options.step = s;
        run->rebuild_layers();
      }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextUnformatted("Ranks");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(150);
  const std::string rank_label = run->layer_options.rank
                                     ? fmt::format("rank {}", *run->layer_options.rank)
                                     : fmt::format("all {} (mean)", b.ranks.size());
  if (ImGui::BeginCombo("##rank", rank_label.c_str())) {
    if (ImGui::Selectable("all ranks (mean, min–max)", !run->layer_options.rank)) {
      run->layer_options.rank.reset();
      run->rebuild_layers();
    }
    for (int r = 0; r < run->data.profile.run.world_size; ++r)
      if (ImGui::Selectable(fmt::format("rank {}", r).c_str(), run->layer_options.rank == r)) {
        run->layer_options.rank = r;
        run->rebuild_layers();
      }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::Button("Expand all"))
    for (const auto& r : b.rows)
      if (!r.children.empty()) expanded_.insert(r.name);
  ImGui::SameLine();
  if (ImGui::Button("Collapse")) expanded_ = {"model"};
  if (!run->error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(to_vec4(colors::kError), "%s", run->error.c_str());
  }

  const LayerBreakdown& lb = run->layers;
  ImGui::Text("Step %lld: %.2f ms per rank [%.2f, %.2f] over %zu rank%s%s", static_cast<long long>(lb.step),
              lb.step_ms.mean, lb.step_ms.min, lb.step_ms.max, lb.ranks.size(),
              lb.ranks.size() == 1 ? "" : "s", lb.step_measured ? "" : " (no measured step time)");
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(colors::kDimText), "(?)");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "The step = the top-level modules' forward + backward\n"
        "  + optimizer + exposed communication outside modules\n"
        "  + comm waits with no collective in flight (when any)\n"
        "  + other (measured step time minus all of that).\n"
        "Exposed = waits while a collective was in flight (waits ∩ collectives).\n"
        "Top-level shares sum to 100%%; a child's share is part of its parent's.\n"
        "Times include child modules and sum over micro-steps;\n"
        "with all ranks: mean over ranks, [min, max] in the ranks column.");
  legend_item(colors::kForward, "forward");
  legend_item(colors::kBackward, "backward");
  legend_item(colors::kExposed, "exposed comm");
  legend_item(colors::kOther, "optimizer / wait without comm / other");
  ImGui::NewLine();
  draw_table(app, *run);
}

void LayersWindow::draw_table(App& app, RunView& run) {
  const LayerBreakdown& b = run.layers;
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortTristate |
                                ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_Hideable;
  if (!ImGui::BeginTable("##layers", kCols, flags, ImVec2(0, 0))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("module", ImGuiTableColumnFlags_NoHide, 200);
  ImGui::TableSetupColumn("type", ImGuiTableColumnFlags_NoSort, 0);
  ImGui::TableSetupColumn("fwd ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("bwd ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("exposed ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("total ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("ranks min–max", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("share", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("of the step", ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_NoSort, 150);
  ImGui::TableSetupColumn("FLOPs", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("achieved", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("params", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("activations", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableHeadersRow();

  LayerColumn column = LayerColumn::tree;
  bool ascending = true;
  if (const ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
    column = sort_column(specs->Specs[0].ColumnIndex);
    ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
  }
  const auto order = layer_display_order(
      b, column, ascending, [&](int row) { return expanded_.count(b.rows[size_t(row)].name) > 0; });

  ImGuiListClipper clipper;
  clipper.Begin(int(order.size()));
  while (clipper.Step()) {
    for (int k = clipper.DisplayStart; k < clipper.DisplayEnd; ++k) {
      const int idx = order[size_t(k)];
      const LayerRow& r = b.rows[size_t(idx)];
      ImGui::TableNextRow();
      ImGui::PushID(idx);
      ImGui::TableNextColumn();
      const float indent = float(r.depth) * ImGui::GetStyle().IndentSpacing * 0.8f;
      if (indent > 0) ImGui::Indent(indent);
      ImGuiTreeNodeFlags tf = ImGuiTreeNodeFlags_SpanFullWidth | ImGuiTreeNodeFlags_NoTreePushOnOpen |
                              ImGuiTreeNodeFlags_OpenOnArrow;
      if (r.children.empty()) tf |= ImGuiTreeNodeFlags_Leaf;
      const bool selected = r.kind == LayerRowKind::module && r.module_id == app.selected_module;
      if (selected) tf |= ImGuiTreeNodeFlags_Selected;
      const bool was_open = expanded_.count(r.name) > 0;
      if (!r.children.empty()) ImGui::SetNextItemOpen(was_open);
      ImU32 name_color = colors::kText;
      if (r.kind == LayerRowKind::exposed_comm) name_color = colors::kExposed;
      if (r.kind == LayerRowKind::optimizer || r.kind == LayerRowKind::other ||
          r.kind == LayerRowKind::blocked_comm)
        name_color = colors::kDimText;
      ImGui::PushStyleColor(ImGuiCol_Text, to_vec4(name_color));
      const bool open = ImGui::TreeNodeEx(r.name.c_str(), tf);
      ImGui::PopStyleColor();
      if (!r.children.empty() && open != was_open) {
        if (open)
          expanded_.insert(r.name);
        else
          expanded_.erase(r.name);
      }
      if (ImGui::IsItemClicked() && !ImGui::IsItemToggledOpen() && r.kind == LayerRowKind::module)
        app.select_module(selected ? -1 : r.module_id, selected ? "" : r.name);
      if (indent > 0) ImGui::Unindent(indent);

      ImGui::TableNextColumn();
      ImGui::TextColored(to_vec4(colors::kDimText), "%s", r.type.c_str());
      const bool module = r.kind == LayerRowKind::module;
      ImGui::TableNextColumn();
      if (module) ImGui::TextUnformatted(ms(r.fwd_ms.mean).c_str());
      ImGui::TableNextColumn();
      if (module) ImGui::TextUnformatted(ms(r.bwd_ms.mean).c_str());
      ImGui::TableNextColumn();
      if (r.exposed_ms.mean > 0)
        ImGui::TextColored(to_vec4(colors::kExposed), "%s", ms(r.exposed_ms.mean).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms(r.total_ms.mean).c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(to_vec4(colors::kDimText), "%.3f–%.3f", r.total_ms.min, r.total_ms.max);
      ImGui::TableNextColumn();
      ImGui::Text("%.1f%%", 100.0 * r.share);
      ImGui::TableNextColumn();
      {
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float w = std::max(40.0f, ImGui::GetContentRegionAvail().x);
        const float h = ImGui::GetTextLineHeight();
        ImDrawList* dl = ImGui::GetWindowDrawList();
        dl->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + w, p.y + h - 2), IM_COL32(255, 255, 255, 12));
        stacked_bar(dl, ImVec2(p.x, p.y + 2), ImVec2(p.x + w, p.y + h - 2),
                    {{r.bar.forward, colors::kForward},
                     {r.bar.backward, colors::kBackward},
                     {r.bar.other, r.kind == LayerRowKind::optimizer ? colors::kOptimizer : colors::kOther},
                     {r.bar.exposed, colors::kExposed}},
                    b.step_ms.mean);
        ImGui::Dummy(ImVec2(w, h));
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(
              "%s\nforward compute %.3f ms · backward compute %.3f ms\n"
              "optimizer / wait without comm / other %.3f ms · exposed comm %.3f ms\n"
              "%.2f%% of the step (%.2f ms)",
              r.name.c_str(), r.bar.forward, r.bar.backward, r.bar.other, r.bar.exposed, 100.0 * r.share,
              b.step_ms.mean);
      }
      ImGui::TableNextColumn();
      if (module) ImGui::TextUnformatted(format_flop(r.fwd_flops + r.bwd_flops).c_str());
      ImGui::TableNextColumn();
      if (module && r.flops_per_s > 0) ImGui::TextUnformatted(format_flop_rate(r.flops_per_s).c_str());
      ImGui::TableNextColumn();
      if (module) ImGui::TextUnformatted(format_count(double(r.params)).c_str());
      ImGui::TableNextColumn();
      if (module && r.activation_bytes) ImGui::TextUnformatted(format_bytes(r.activation_bytes).c_str());
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
}

}  // namespace hybrid::gui
