// Sweeps and trials: the leaderboard of a sweep (config columns, metric, status,
// failure reason), sortable and filterable; a scatter of the metric against the
// micro-batch size coloured by ZeRO stage; and the candidates the memory model
// pruned with their predicted memory. A trial with a run opens that run.
#include <fmt/format.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <iterator>

#include "gui/view/plot.h"
#include "gui/view/theme.h"
#include "gui/view/windows.h"

namespace hybrid::gui {

namespace {

using profiler::TrialStatus;

enum Col {
  kId,
  kMb,
  kGas,
  kStage,
  kBucket,
  kAgBucket,
  kOverlap,
  kDtype,
  kMetric,
  kLatency,
  kPred,
  kPeak,
  kStatus,
  kReason,
  kCols
};

SweepColumn sweep_column(int col) {
  static const SweepColumn map[] = {
      SweepColumn::id,         SweepColumn::micro_batch,   SweepColumn::grad_accum,
      SweepColumn::zero_stage, SweepColumn::reduce_bucket, SweepColumn::allgather_bucket,
      SweepColumn::overlap,    SweepColumn::dtype,         SweepColumn::metric,
      SweepColumn::latency,    SweepColumn::predicted_mem, SweepColumn::peak_mem,
      SweepColumn::status,     SweepColumn::reason};
  static_assert(std::size(map) == kCols);
  return col >= 0 && col < kCols ? map[col] : SweepColumn::reason;
}

ImU32 status_color(TrialStatus s) {
  switch (s) {
    case TrialStatus::ok:
      return colors::kGood;
    case TrialStatus::pending:
      return colors::kDimText;
    case TrialStatus::running:
      return colors::kHighlight;
    default:
      return colors::kError;
  }
}

template <class T>
std::string opt(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "-";
}

std::string elements(const std::optional<double>& v) {
  if (!v) return "-";
  return fmt::format("{:.3g}", *v);
}

}  // namespace

// The sweep shown: the one chosen, else the sweep of the run on screen, else the newest.
void SweepsWindow::choose_sweep(App& app) {
  Database* db = app.database();
  const auto& sweeps = db->sweeps();
  if (sweep_id_ < 0 ||
      !std::any_of(sweeps.begin(), sweeps.end(), [&](auto& s) { return s.id == sweep_id_; })) {
    sweep_id_ = sweeps.back().id;
    if (const RunView* run = app.run())
      for (const auto& s : sweeps)
        for (const auto& t : db->trials(s.id))
          if (t.run_id == run->data.profile.run.id) sweep_id_ = s.id;
  }
  if (table_generation_ != db->generation() || table_sweep_ != sweep_id_) {
    const auto it =
        std::find_if(sweeps.begin(), sweeps.end(), [&](auto& s) { return s.id == sweep_id_; });
    table_ = build_sweep_table(*it, db->trials(sweep_id_), db->pruned(sweep_id_));
    table_generation_ = db->generation();
    table_sweep_ = sweep_id_;
  }
}

void SweepsWindow::draw_header(App& app) {
  const auto& sweeps = app.database()->sweeps();
  const SweepTable& t = table_;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Sweep");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(360);
  const std::string label = fmt::format("#{} {} ({}, {})", t.sweep.id, t.sweep.name,
                                        t.sweep.strategy, profiler::to_string(t.sweep.status));
  if (ImGui::BeginCombo("##sweep", label.c_str())) {
    for (auto it = sweeps.rbegin(); it != sweeps.rend(); ++it)
      if (ImGui::Selectable(
              fmt::format("#{} {} ({})", it->id, it->name, profiler::to_string(it->status)).c_str(),
              it->id == sweep_id_))
        sweep_id_ = it->id;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::Text(
      "%zu trials: %d ok · %d oom · %d failed/timeout/diverged · %d running · %zu pruned · metric "
      "%s (%s)",
      t.rows.size(), t.count(TrialStatus::ok), t.count(TrialStatus::oom),
      t.count(TrialStatus::failed) + t.count(TrialStatus::crash) + t.count(TrialStatus::timeout) +
          t.count(TrialStatus::config_error) + t.count(TrialStatus::node_failure) +
          t.count(TrialStatus::cancelled) + t.count(TrialStatus::diverged),
      t.count(TrialStatus::running), t.pruned.size(), t.sweep.metric.c_str(),
      std::string(profiler::to_string(t.metric.direction)).c_str());
  ImGui::SetNextItemWidth(260);
  ImGui::InputTextWithHint("##filter", "filter: key, status, reason, dtype", &filter_.text);
  ImGui::SameLine();
  ImGui::Checkbox("measured only", &filter_.ok_only);
  if (t.best >= 0) {
    ImGui::SameLine();
    const auto& best = t.rows[size_t(t.best)];
    ImGui::TextColored(to_vec4(colors::kHighlight), "best: %s = %.4g (trial %lld)",
                       best.trial.key.c_str(), *best.trial.metric,
                       static_cast<long long>(best.trial.id));
  }
}

namespace {

void setup_trial_columns(const SweepTable& t) {
  ImGui::TableSetupScrollFreeze(1, 1);
  for (const char* name : {"trial", "micro batch", "grad accum", "ZeRO", "reduce bucket",
                           "allgather bucket", "overlap", "dtype"})
    ImGui::TableSetupColumn(name);
  // The metric's column sorts best-first on the first click.
  ImGui::TableSetupColumn(t.sweep.metric.empty() ? "metric" : t.sweep.metric.c_str(),
                          t.metric.higher_is_better() ? ImGuiTableColumnFlags_PreferSortDescending
                                                      : ImGuiTableColumnFlags_PreferSortAscending);
  for (const char* name : {"ms / step", "predicted mem", "peak mem", "status"})
    ImGui::TableSetupColumn(name);
  ImGui::TableSetupColumn("reason", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
}

void cell(const std::string& text) {
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(text.c_str());
}

// The columns after the trial id, left to right.
void draw_trial_cells(const SweepRow& r) {
  cell(opt(r.config.micro_batch));
  cell(opt(r.config.grad_accum));
  ImGui::TableNextColumn();
  ImGui::TextColored(to_vec4(zero_stage_color(r.config.zero_stage.value_or(-1))), "%s",
                     opt(r.config.zero_stage).c_str());
  cell(elements(r.config.reduce_bucket));
  cell(elements(r.config.allgather_bucket));
  cell(r.config.overlap_comm ? (*r.config.overlap_comm ? "yes" : "no") : "-");
  cell(r.config.dtype().empty() ? "-" : std::string(r.config.dtype()));
  // The point, its 95 % interval (the median step time's), "~" when still noisy.
  std::string metric = r.trial.metric ? fmt::format("{:.5g}", *r.trial.metric) : "-";
  if (r.trial.metric && r.interval)
    metric += fmt::format(" [{:.4g}, {:.4g}]", r.interval->lo, r.interval->hi);
  if (r.trial.noisy) metric += " ~noisy";
  cell(metric);
  cell(r.trial.latency_ms ? fmt::format("{:.2f}", *r.trial.latency_ms) : "-");
  cell(r.trial.predicted_mem_bytes ? format_bytes(*r.trial.predicted_mem_bytes) : "-");
  cell(r.trial.peak_mem_bytes ? format_bytes(*r.trial.peak_mem_bytes) : "-");
  ImGui::TableNextColumn();
  ImGui::TextColored(to_vec4(status_color(r.trial.status)), "%s",
                     std::string(profiler::to_string(r.trial.status)).c_str());
  cell(r.trial.reason);
}

}  // namespace

void SweepsWindow::draw_trials(App& app) {
  const SweepTable& t = table_;
  const float avail = ImGui::GetContentRegionAvail().y;
  const float rows_h = ImGui::GetFrameHeightWithSpacing() * float(t.rows.size() + 1) + 8;
  const float table_h = std::clamp(rows_h, 120.0f, std::max(120.0f, avail * 0.5f));
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortTristate |
                                ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_Hideable;
  if (!ImGui::BeginTable("##trials", kCols, flags, ImVec2(0, table_h))) return;
  setup_trial_columns(t);
  SweepColumn column = SweepColumn::id;
  bool ascending = true;
  if (const ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
      specs && specs->SpecsCount > 0) {
    column = sweep_column(specs->Specs[0].ColumnIndex);
    ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
  }
  const int64_t current_run = app.run() ? app.run()->data.profile.run.id : -1;
  for (int i : sweep_display_order(t, column, ascending, filter_)) {
    const SweepRow& r = t.rows[size_t(i)];
    ImGui::TableNextRow();
    if (i == t.best) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(255, 236, 110, 28));
    ImGui::TableNextColumn();
    const bool sel = r.trial.run_id && *r.trial.run_id == current_run;
    if (ImGui::Selectable(fmt::format("{}##t{}", r.trial.id, i).c_str(), sel,
                          ImGuiSelectableFlags_SpanAllColumns) &&
        r.trial.run_id)
      app.select_run(*r.trial.run_id);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s\n%s", r.trial.key.c_str(),
                        r.trial.run_id ? "click: open its run" : "no run recorded");
    draw_trial_cells(r);
  }
  ImGui::EndTable();
}

void SweepsWindow::draw_scatter(App& app) {
  const SweepTable& t = table_;
  std::vector<ScatterDot> dots;
  for (const auto& p : t.scatter) {
    const auto& r = t.rows[size_t(p.row)];
    dots.push_back({p.micro_batch, p.metric, zero_stage_color(p.zero_stage),
                    fmt::format("{}\n{} = {:.5g}\nZeRO {} · micro batch {:.0f}", r.trial.key,
                                t.sweep.metric, p.metric, p.zero_stage, p.micro_batch),
                    p.row == t.best});
  }
  PlotOptions o;
  o.title = fmt::format("{} vs micro batch (colour: ZeRO stage)", t.sweep.metric);
  o.height = std::max(160.0f, ImGui::GetContentRegionAvail().y - 30);
  const int clicked = scatter_plot("scatter", dots, o, "micro batch (log2)", true);
  if (clicked >= 0) {
    const auto& r = t.rows[size_t(t.scatter[size_t(clicked)].row)];
    if (r.trial.run_id) app.select_run(*r.trial.run_id);
  }
  for (int stage = 0; stage <= 3; ++stage) {
    ImGui::TextColored(to_vec4(zero_stage_color(stage)), "● ZeRO %d", stage);
    ImGui::SameLine();
  }
  ImGui::NewLine();
}

void SweepsWindow::draw_pruned() {
  const SweepTable& t = table_;
  ImGui::TextColored(to_vec4(colors::kDimText), "Pruned by the memory model (never run)");
  if (t.pruned.empty()) {
    ImGui::TextColored(to_vec4(colors::kDimText), "none");
    return;
  }
  if (!ImGui::BeginTable("##pruned", 5,
                         ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY))
    return;
  ImGui::TableSetupColumn("micro batch");
  ImGui::TableSetupColumn("ZeRO");
  ImGui::TableSetupColumn("predicted");
  ImGui::TableSetupColumn("budget");
  ImGui::TableSetupColumn("reason", ImGuiTableColumnFlags_WidthStretch, 3.0f);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < t.pruned.size(); ++i) {
    const auto& p = t.pruned[i];
    const auto& c = t.pruned_config[i];
    ImGui::TableNextRow();
    cell(opt(c.micro_batch));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", p.key.c_str());
    cell(opt(c.zero_stage));
    ImGui::TableNextColumn();
    ImGui::TextColored(to_vec4(colors::kError), "%s", format_bytes(p.predicted_mem_bytes).c_str());
    cell(format_bytes(p.budget_bytes));
    cell(p.reason);
  }
  ImGui::EndTable();
}

void SweepsWindow::draw(App& app) {
  if (app.database()->sweeps().empty()) {
    ImGui::TextColored(
        to_vec4(colors::kDimText),
        "No sweeps in this database (hybrid-tune writes them); the run windows still work.");
    return;
  }
  choose_sweep(app);
  draw_header(app);
  draw_trials(app);
  // Scatter (left) and pruned candidates (right).
  if (ImGui::BeginTable("##lower", 2, ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableNextColumn();
    draw_scatter(app);
    ImGui::TableNextColumn();
    draw_pruned();
    ImGui::EndTable();
  }
}

}  // namespace hybrid::gui
