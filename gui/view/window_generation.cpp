// Generation: the store's generation rows (hybrid-generate, its --bench, hybrid-
// train's rollout steps), the shown run's rows highlighted: their figures, the
// time per output token of each as bars (p99 and p90 fainter behind p50,
// scaled to the largest p99), and the rollout breakdown when a row has one.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

#include "gui/model/generation_model.h"
#include "gui/view/app.h"
#include "gui/view/theme.h"

namespace hybrid::gui {

namespace {

// The bars' colours: p50 solid, the tail fainter behind it.
constexpr ImU32 kTpotP50 = colors::kForward;
constexpr ImU32 kTpotP90 = IM_COL32(76, 139, 214, 150);
constexpr ImU32 kTpotP99 = IM_COL32(76, 139, 214, 70);

constexpr ImGuiTableFlags kTableFlags =
    ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;

void cell(const std::string& text) {
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(text.c_str());
}

std::string ms(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "-"; }

std::string label(const GenerationLine& l) {
  const auto& r = l.row;
  std::string s = fmt::format("#{} {}", r.run_id, l.run_name);
  if (!r.test.empty()) s += " " + r.test;
  if (r.step) s += fmt::format(" step {}", *r.step);
  return s;
}

// Opens a table row, in the highlight colour for the shown run's rows
// (end_row pops it).
void begin_row(bool shown) {
  ImGui::TableNextRow();
  if (shown) ImGui::PushStyleColor(ImGuiCol_Text, to_vec4(colors::kHighlight));
}
void end_row(bool shown) {
  if (shown) ImGui::PopStyleColor();
}

void figures_table(const GenerationTable& t, int64_t shown_run) {
  const char* names[] = {"run",      "kind",     "test",     "model",    "dtype",
                         "batch",    "prompts",  "new tok.", "ttft p50", "ttft p90",
                         "ttft p99", "tpot p50", "tpot p90", "tpot p99", "tokens/s"};
  if (!ImGui::BeginTable("##generations", int(std::size(names)), kTableFlags)) return;
  for (const char* n : names) ImGui::TableSetupColumn(n);
  ImGui::TableHeadersRow();
  for (const auto& l : t.lines) {
    const auto& r = l.row;
    const bool shown = r.run_id == shown_run;
    begin_row(shown);
    for (const std::string& s :
         {fmt::format("#{} {}", r.run_id, l.run_name), std::string(profiler::to_string(r.kind)),
          r.test.empty() ? std::string("-") : r.test, r.model, r.dtype, std::to_string(r.batch),
          std::to_string(r.prompts), std::to_string(r.new_tokens)})
      cell(s);
    for (const auto& p : {r.ttft_ms, r.tpot_ms})
      for (const auto m : {&profiler::LatencyPercentiles::p50, &profiler::LatencyPercentiles::p90,
                           &profiler::LatencyPercentiles::p99})
        cell(p ? fmt::format("{:.2f}", (*p).*m) : "-");
    cell(r.tokens_per_s_sd ? fmt::format("{:.1f} ± {:.1f}", r.tokens_per_s, *r.tokens_per_s_sd)
                           : fmt::format("{:.1f}", r.tokens_per_s));
    end_row(shown);
  }
  ImGui::EndTable();
}

void tpot_bar(const profiler::LatencyPercentiles& p, double scale) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float w = std::max(80.0f, ImGui::GetContentRegionAvail().x), h = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const std::pair<double, ImU32> bars[] = {{p.p99, kTpotP99}, {p.p90, kTpotP90}, {p.p50, kTpotP50}};
  for (const auto& bar : bars)
    dl->AddRectFilled(ImVec2(at.x, at.y + 2),
                      ImVec2(at.x + float(bar_fraction(bar.first, scale)) * w, at.y + h - 2),
                      bar.second);
  ImGui::Dummy(ImVec2(w, h));
}

void tpot_bars(const GenerationTable& t, int64_t shown_run) {
  if (!ImGui::BeginTable("##tpot", 3, kTableFlags)) return;
  ImGui::TableSetupColumn("row");
  ImGui::TableSetupColumn("p50 / p90 / p99 ms");
  ImGui::TableSetupColumn("bar", ImGuiTableColumnFlags_WidthStretch);
  for (const auto& l : t.lines) {
    if (!l.row.tpot_ms) continue;
    const auto& p = *l.row.tpot_ms;
    const bool shown = l.row.run_id == shown_run;
    begin_row(shown);
    cell(label(l));
    cell(fmt::format("{:.2f} / {:.2f} / {:.2f}", p.p50, p.p90, p.p99));
    end_row(shown);
    ImGui::TableNextColumn();
    tpot_bar(p, t.tpot_scale_ms);
  }
  ImGui::EndTable();
}

void breakdown_table(const GenerationTable& t, int64_t shown_run) {
  const char* names[] = {"row", "e2e", "gather", "generate", "train", "other", "samples/s"};
  if (!ImGui::BeginTable("##breakdown", int(std::size(names)), kTableFlags)) return;
  for (const char* n : names) ImGui::TableSetupColumn(n);
  ImGui::TableHeadersRow();
  for (const auto& l : t.lines) {
    const auto& r = l.row;
    if (!r.e2e_ms && !r.gather_ms && !r.generate_ms && !r.train_ms && !r.other_ms &&
        !r.samples_per_s)
      continue;
    const bool shown = r.run_id == shown_run;
    begin_row(shown);
    cell(label(l));
    for (const auto& v :
         {r.e2e_ms, r.gather_ms, r.generate_ms, r.train_ms, r.other_ms, r.samples_per_s})
      cell(ms(v));
    end_row(shown);
  }
  ImGui::EndTable();
}

}  // namespace

void draw_generation_window(App& app) {
  const GenerationTable t =
      build_generation_table(app.database()->runs(), app.database()->generations());
  if (t.lines.empty()) {
    ImGui::TextColored(to_vec4(colors::kDimText),
                       "No generation rows in this store: hybrid-generate --db, its --bench, and "
                       "hybrid-train's rollout steps write them.");
    return;
  }
  const int64_t shown = app.run() ? app.run()->data.profile.run.id : -1;
  ImGui::Text(
      "%zu generation row(s); times in ms: ttft from the call's start to a prompt's first "
      "token, tpot per decode step",
      t.lines.size());
  figures_table(t, shown);
  if (t.tpot_scale_ms > 0) {
    section("Time per output token: p50 over p90 and p99");
    tpot_bars(t, shown);
  }
  if (t.any_breakdown) {
    section("Rollout breakdown (ms per step)");
    breakdown_table(t, shown);
  }
}

}  // namespace hybrid::gui
