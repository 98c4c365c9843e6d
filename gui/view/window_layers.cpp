// Layer breakdown: one row per module (a collapsible tree), forward / backward /
// exposed-comm times with their spread over ranks, share of the step with a
// stacked bar, FLOPs, achieved FLOP/s, parameters and activation memory; sortable
// by any column; a click selects the module, which the timeline highlights. On a
// GPU run the times are device times, with the host (launch) times in a column of
// their own and in the tooltips.
#include <fmt/format.h>
#include <imgui.h>

#include <cmath>
#include <iterator>

#include "gui/view/plot.h"
#include "gui/view/theme.h"
#include "gui/view/windows.h"

namespace hybrid::gui {

namespace {

enum Col {
  kName,
  kType,
  kFwd,
  kBwd,
  kRecompute,
  kHost,
  kExposed,
  kTotal,
  kRanks,
  kShare,
  kBar,
  kFlops,
  kRate,
  kParams,
  kActs,
  kCols
};

LayerColumn sort_column(int col) {
  // The type column sorts as the tree; the ranks and bar columns as the total.
  static const LayerColumn map[] = {
      LayerColumn::name,        LayerColumn::tree,   LayerColumn::fwd,        LayerColumn::bwd,
      LayerColumn::recompute,   LayerColumn::host,   LayerColumn::exposed,    LayerColumn::total,
      LayerColumn::total,       LayerColumn::share,  LayerColumn::total,      LayerColumn::flops,
      LayerColumn::flops_per_s, LayerColumn::params, LayerColumn::activations};
  static_assert(std::size(map) == kCols);
  return col >= 0 && col < kCols ? map[col] : LayerColumn::tree;
}

std::string ms(double v) { return fmt::format("{:.3f}", v); }

void legend_item(ImU32 color, const char* label) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 3), ImVec2(p.x + h - 6, p.y + h - 3),
                                            color);
  ImGui::Dummy(ImVec2(h - 4, h));
  ImGui::SameLine();
  ImGui::TextUnformatted(label);
  ImGui::SameLine(0, 16);
}

// A device time, with its host (launch) time in the tooltip when they differ.
void time_cell(double device_ms, double host_ms, const char* phase, bool host_differs) {
  ImGui::TextUnformatted(ms(device_ms).c_str());
  if (host_differs && ImGui::IsItemHovered())
    ImGui::SetTooltip("%s: %.3f ms on the device, %.3f ms on the host (launching)", phase,
                      device_ms, host_ms);
}

// The step's time, what it is made of (tooltip), and the bars' legend.
void draw_step_summary(const LayerBreakdown& lb) {
  ImGui::Text("Step %lld: %.2f ms per rank [%.2f, %.2f] over %zu rank%s%s%s",
              static_cast<long long>(lb.step), lb.step_ms.mean, lb.step_ms.min, lb.step_ms.max,
              lb.ranks.size(), lb.ranks.size() == 1 ? "" : "s",
              lb.step_measured ? "" : " (no measured step time: the sum of the rows)",
              lb.device_times ? " · module times are GPU device time" : "");
  help_marker(
      "The step = the top-level modules' forward + backward\n"
      "  + recompute (activation checkpointing: forwards run again in backward)\n"
      "  + optimizer + exposed communication outside modules\n"
      "  + comm waits with no collective in flight (when any)\n"
      "  + other (measured step time minus all of that).\n"
      "Exposed = waits while a collective was in flight (waits ∩ collectives).\n"
      "Top-level shares sum to 100%; a child's share is part of its parent's.\n"
      "Times include child modules and sum over micro-steps;\n"
      "with all ranks: mean over ranks, [min, max] in the ranks column.\n"
      "On a GPU: forward/backward are the device time of the kernels and\n"
      "copies launched in the module's scope; host ms is the scopes' CPU time\n"
      "(launching); the step is the modules' device time plus other (device\n"
      "idle and work outside modules) up to the measured step time.");
  legend_item(colors::kForward, "forward");
  legend_item(colors::kBackward, "backward");
  if (lb.has_recompute) legend_item(colors::kRecompute, "recompute");
  legend_item(colors::kExposed, "exposed comm");
  legend_item(colors::kOther, "optimizer / wait without comm / other");
  ImGui::NewLine();
}

// The stacked bar of a row, full width = the step.
void bar_cell(const LayerRow& r, const LayerBreakdown& b) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = std::max(40.0f, ImGui::GetContentRegionAvail().x);
  const float h = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + w, p.y + h - 2),
                    IM_COL32(255, 255, 255, 12));
  stacked_bar(
      dl, ImVec2(p.x, p.y + 2), ImVec2(p.x + w, p.y + h - 2),
      {{r.bar.forward, colors::kForward},
       {r.bar.backward, colors::kBackward},
       {r.bar.recompute, colors::kRecompute},
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

}  // namespace

void LayersWindow::draw(App& app) {
  RunView* run = app.run();
  if (!run) {
    ImGui::TextColored(to_vec4(colors::kDimText), "No run selected.");
    return;
  }
  LayerBreakdown& b = run->layers;
  if (shown_run_ != b.run_id) {
    // A new run opens with its roots expanded (an imported trace's roots are its scopes).
    shown_run_ = b.run_id;
    for (int r : b.top_rows)
      if (!b.rows[size_t(r)].children.empty()) expanded_.insert(b.rows[size_t(r)].name);
  }
  if (!b.has_stats()) {
    ImGui::TextColored(to_vec4(colors::kDimText),
                       "Run %lld has no layer profile: enable \"flops_profiler\" in the config "
                       "(profile_step) to record one.",
                       static_cast<long long>(run->data.profile.run.id));
    return;
  }
  draw_controls(*run);
  draw_step_summary(run->layers);
  draw_table(app, *run);
}

void LayersWindow::draw_controls(RunView& run) {
  const LayerBreakdown& b = run.layers;
  // Step and rank selectors.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Profiled step");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  if (ImGui::BeginCombo("##step", std::to_string(b.step).c_str())) {
    for (int64_t s : b.profiled_steps)
      if (ImGui::Selectable(std::to_string(s).c_str(), s == b.step)) {
        run.layer_options.step = s;
        run.rebuild_layers();  // replaces the vector being iterated: stop here
        break;
      }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextUnformatted("Ranks");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(150);
  const std::string rank_label = run.layer_options.rank
                                     ? fmt::format("rank {}", *run.layer_options.rank)
                                     : fmt::format("all {} (mean)", b.ranks.size());
  if (ImGui::BeginCombo("##rank", rank_label.c_str())) {
    if (ImGui::Selectable("all ranks (mean, min–max)", !run.layer_options.rank)) {
      run.layer_options.rank.reset();
      run.rebuild_layers();
    }
    for (int r : b.ranks_with_stats)
      if (ImGui::Selectable(fmt::format("rank {}", r).c_str(), run.layer_options.rank == r)) {
        run.layer_options.rank = r;
        run.rebuild_layers();
        break;
      }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::Button("Expand all"))
    for (const auto& r : b.rows)
      if (!r.children.empty()) expanded_.insert(r.name);
  ImGui::SameLine();
  if (ImGui::Button("Collapse")) expanded_ = {"model"};
  if (!run.error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(to_vec4(colors::kError), "%s", run.error.c_str());
  }
}

void LayersWindow::draw_table(App& app, RunView& run) {
  const LayerBreakdown& b = run.layers;
  const ImGuiTableFlags flags =
      ImGuiTableFlags_Sortable | ImGuiTableFlags_SortTristate | ImGuiTableFlags_RowBg |
      ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
      ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_Hideable;
  if (!ImGui::BeginTable("##layers", kCols, flags, ImVec2(0, 0))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("module", ImGuiTableColumnFlags_NoHide, 200);
  ImGui::TableSetupColumn("type", ImGuiTableColumnFlags_NoSort, 0);
  ImGui::TableSetupColumn(b.device_times ? "fwd ms (device)" : "fwd ms",
                          ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn(b.device_times ? "bwd ms (device)" : "bwd ms",
                          ImGuiTableColumnFlags_PreferSortDescending);
  // Activation checkpointing: shown when the step recomputed anything.
  ImGui::TableSetupColumn(b.device_times ? "recompute ms (device)" : "recompute ms",
                          ImGuiTableColumnFlags_PreferSortDescending |
                              (b.has_recompute ? 0 : ImGuiTableColumnFlags_DefaultHide));
  ImGui::TableSetupColumn("host ms", ImGuiTableColumnFlags_PreferSortDescending |
                                         (b.host_differs ? 0 : ImGuiTableColumnFlags_Disabled));
  ImGui::TableSetupColumn("exposed ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("total ms", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("ranks min–max", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("share", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("of the step",
                          ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_NoSort, 150);
  ImGui::TableSetupColumn("FLOPs", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("achieved", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("params", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableSetupColumn("activations", ImGuiTableColumnFlags_PreferSortDescending);
  ImGui::TableHeadersRow();

  LayerColumn column = LayerColumn::tree;
  bool ascending = true;
  if (const ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
      specs && specs->SpecsCount > 0) {
    column = sort_column(specs->Specs[0].ColumnIndex);
    ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
  }
  const auto order = layer_display_order(
      b, column, ascending, [&](int row) { return expanded_.count(b.rows[size_t(row)].name) > 0; });

  ImGuiListClipper clipper;
  clipper.Begin(int(order.size()));
  while (clipper.Step())
    for (int k = clipper.DisplayStart; k < clipper.DisplayEnd; ++k)
      draw_row(app, b, order[size_t(k)]);
  ImGui::EndTable();
}

void LayersWindow::draw_name_cell(App& app, const LayerBreakdown& b, int idx) {
  const LayerRow& r = b.rows[size_t(idx)];
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
  // The row index is the id: imported scope names hold "##" (ImGui's id marker) and repeat.
  const bool open =
      ImGui::TreeNodeEx(reinterpret_cast<void*>(intptr_t(idx)), tf, "%s", r.name.c_str());
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
}

void LayersWindow::draw_row(App& app, const LayerBreakdown& b, int idx) {
  const LayerRow& r = b.rows[size_t(idx)];
  ImGui::TableNextRow();
  ImGui::PushID(idx);
  ImGui::TableNextColumn();
  draw_name_cell(app, b, idx);
  ImGui::TableNextColumn();
  ImGui::TextColored(to_vec4(colors::kDimText), "%s", r.type.c_str());
  const bool module = r.kind == LayerRowKind::module;
  ImGui::TableNextColumn();
  if (module) time_cell(r.fwd_ms.mean, r.host_fwd_ms.mean, "forward", b.host_differs);
  ImGui::TableNextColumn();
  if (module) time_cell(r.bwd_ms.mean, r.host_bwd_ms.mean, "backward", b.host_differs);
  ImGui::TableNextColumn();
  if (module && r.recompute_ms.mean > 0)
    time_cell(r.recompute_ms.mean, r.host_recompute_ms.mean, "recompute", b.host_differs);
  ImGui::TableNextColumn();
  if (module && b.host_differs)
    ImGui::TextColored(
        to_vec4(colors::kDimText), "%s",
        ms(r.host_fwd_ms.mean + r.host_bwd_ms.mean + r.host_recompute_ms.mean).c_str());
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
  bar_cell(r, b);
  ImGui::TableNextColumn();
  if (module)
    ImGui::TextUnformatted(format_flop(r.fwd_flops + r.bwd_flops + r.recompute_flops).c_str());
  ImGui::TableNextColumn();
  if (module && r.flops_per_s > 0) ImGui::TextUnformatted(format_flop_rate(r.flops_per_s).c_str());
  ImGui::TableNextColumn();
  if (module) ImGui::TextUnformatted(format_count(double(r.params)).c_str());
  ImGui::TableNextColumn();
  if (module && r.activation_bytes)
    ImGui::TextUnformatted(format_bytes(r.activation_bytes).c_str());
  ImGui::PopID();
}

}  // namespace hybrid::gui
