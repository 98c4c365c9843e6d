// GPU: how each rank's device spent its time, from the GPU-timeline analysis
// (gui/model/gpu_summary.h): a stacked bar per rank (idle / compute / non-compute)
// over the span from its first GPU record to its last, the communication that ran
// while computation did (overlap) against the exposed part, the exclusive kinds of
// work, and the kernels that took the most device time.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

#include "gui/model/gpu_summary.h"
#include "gui/view/app.h"
#include "gui/view/plot.h"
#include "gui/view/theme.h"
#include "gui/view/windows.h"

namespace hybrid::gui {

namespace {

constexpr float kBarHeight = 18;

std::string ms_of(double us) { return format_ms(us * 1e-3); }

void legend(ImU32 color, const char* label) {
  ImGui::TextColored(to_vec4(color), "■");
  ImGui::SameLine(0, 4);
  ImGui::TextUnformatted(label);
  ImGui::SameLine(0, 18);
}

// A stacked bar of `parts` (full width = `full`), with each part's share written
// inside it when there is room.
void labelled_bar(const std::vector<BarPart>& parts, double full, float width) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + width, p.y + kBarHeight), IM_COL32(255, 255, 255, 12));
  stacked_bar(dl, p, ImVec2(p.x + width, p.y + kBarHeight), parts, full);
  float x = p.x;
  for (const BarPart& part : parts) {
    if (part.value <= 0 || full <= 0) continue;
    const float w = float(part.value / full) * width;
    const std::string label = fmt::format("{:.1f}%", 100.0 * part.value / full);
    if (w > ImGui::CalcTextSize(label.c_str()).x + 8)
      dl->AddText(ImVec2(x + 4, p.y + (kBarHeight - ImGui::GetFontSize()) / 2),
                  IM_COL32(15, 15, 20, 255), label.c_str());
    x += w;
  }
  ImGui::Dummy(ImVec2(width, kBarHeight));
}

void draw_temporal(const GpuSummary& s) {
  section("Temporal breakdown per rank (span: first GPU record's start to last record's end)");
  legend(colors::kGpuIdle, "idle (no kernel or copy)");
  legend(colors::kGpuCompute, "compute (a computation kernel runs)");
  legend(colors::kGpuNonCompute, "non-compute (only communication / memory work)");
  ImGui::NewLine();
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##gputemporal", 7, flags)) return;
  ImGui::TableSetupColumn("rank");
  ImGui::TableSetupColumn("span");
  ImGui::TableSetupColumn("idle / compute / non-compute", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("idle");
  ImGui::TableSetupColumn("compute");
  ImGui::TableSetupColumn("non-compute");
  ImGui::TableSetupColumn("kernels (comp / comm / mem)");
  ImGui::TableHeadersRow();
  for (const GpuRankSummary& r : s.ranks) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%d", r.rank);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(ms_of(r.span_us).c_str());
    ImGui::TableNextColumn();
    labelled_bar({{r.idle_us, colors::kGpuIdle},
                  {r.compute_us, colors::kGpuCompute},
                  {r.non_compute_us, colors::kGpuNonCompute}},
                 r.span_us, std::max(120.0f, ImGui::GetContentRegionAvail().x));
    for (auto [us, pct] : {std::pair{r.idle_us, r.idle_pct},
                           {r.compute_us, r.compute_pct},
                           {r.non_compute_us, r.non_compute_pct}}) {
      ImGui::TableNextColumn();
      ImGui::Text("%.2f%% · %s", pct, ms_of(us).c_str());
    }
    ImGui::TableNextColumn();
    ImGui::Text("%llu / %llu / %llu", static_cast<unsigned long long>(r.computation_kernels),
                static_cast<unsigned long long>(r.communication_kernels),
                static_cast<unsigned long long>(r.memory_records));
  }
  ImGui::EndTable();
}

void draw_overlap(const GpuSummary& s) {
  section("Communication: overlapped with computation, or exposed (no computation running)");
  legend(colors::kGpuCompute, "overlapped");
  legend(colors::kExposed, "exposed");
  ImGui::NewLine();
  for (const GpuRankSummary& r : s.ranks) {
    ImGui::Text("rank %d", r.rank);
    ImGui::SameLine(70);
    if (!r.overlap_pct) {
      ImGui::TextColored(to_vec4(colors::kDimText), "no communication kernels");
      continue;
    }
    const double overlapped = r.comm_us - r.exposed_comm_us;
    labelled_bar({{overlapped, colors::kGpuCompute}, {r.exposed_comm_us, colors::kExposed}},
                 r.comm_us, std::min(420.0f, ImGui::GetContentRegionAvail().x * 0.45f));
    ImGui::SameLine();
    ImGui::Text("overlap %.2f%% of %s communication · exposed %s (%.2f%% of the span)",
                *r.overlap_pct, ms_of(r.comm_us).c_str(), ms_of(r.exposed_comm_us).c_str(),
                r.exposed_comm_pct);
  }
}

void draw_kinds(const GpuSummary& s) {
  section(
      "Kernel-type breakdown (exclusive: time when exactly these kinds of work run; % of the "
      "span)");
  const int cols = 1 + int(std::min<size_t>(s.ranks.size(), 16));
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##gpukinds", cols, flags)) return;
  ImGui::TableSetupColumn("kind");
  for (int c = 1; c < cols; ++c)
    ImGui::TableSetupColumn(fmt::format("rank {}", s.ranks[size_t(c - 1)].rank).c_str());
  ImGui::TableHeadersRow();
  for (int mask = 0; mask < profiler::kGpuWorkMasks; ++mask) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(profiler::gpu_work_mask_name(mask).c_str());
    for (int c = 1; c < cols; ++c) {
      ImGui::TableNextColumn();
      const GpuRankSummary& r = s.ranks[size_t(c - 1)];
      double us = mask == 0 ? r.idle_us : 0, pct = mask == 0 ? r.idle_pct : 0;
      for (const GpuKindShare& k : r.kinds)
        if (k.mask == mask) us = k.us, pct = k.pct;
      if (us > 0)
        ImGui::Text("%s · %.2f%%", ms_of(us).c_str(), pct);
      else
        ImGui::TextColored(to_vec4(colors::kDimText), "-");
    }
  }
  ImGui::EndTable();
}

void draw_top_kernels(const GpuSummary& s, int& rank_index) {
  section("Kernels that took the most device time");
  rank_index = std::clamp(rank_index, 0, int(s.ranks.size()) - 1);
  const GpuRankSummary& r = s.ranks[size_t(rank_index)];
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Rank");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  if (ImGui::BeginCombo("##gpurank", std::to_string(r.rank).c_str())) {
    for (size_t i = 0; i < s.ranks.size(); ++i)
      if (ImGui::Selectable(std::to_string(s.ranks[i].rank).c_str(), int(i) == rank_index))
        rank_index = int(i);
    ImGui::EndCombo();
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("##gputop", 6, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("kernel", ImGuiTableColumnFlags_WidthStretch);
  for (const char* h : {"kind", "count", "total", "% of span", "max"}) ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  for (const auto& k : r.top_kernels) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(k.name.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", k.name.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::string(profiler::to_string(k.work)).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%llu", static_cast<unsigned long long>(k.count));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_ms(double(k.total_ns) * 1e-6).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.2f%%", r.span_us > 0 ? 100.0 * double(k.total_ns) * 1e-3 / r.span_us : 0.0);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_ms(double(k.max_ns) * 1e-6).c_str());
  }
  ImGui::EndTable();
}

}  // namespace

void GpuWindow::draw(App& app) {
  RunView* run = app.run();
  if (!run) {
    ImGui::TextColored(to_vec4(colors::kDimText), "No run selected.");
    return;
  }
  const GpuSummary& s = run->gpu;
  const auto& info = run->data.profile.run;
  ImGui::Text("Run #%lld %s · source %s · backend %s · device %s", static_cast<long long>(s.run_id),
              info.name.c_str(), s.source.c_str(), s.backend.empty() ? "-" : s.backend.c_str(),
              s.device.empty() ? "-" : s.device.c_str());
  if (!s.has_gpu()) {
    ImGui::Spacing();
    ImGui::TextColored(
        to_vec4(colors::kDimText),
        "This run has no GPU records: it ran on the CPU, or CUPTI was off. Import a "
        "PyTorch profiler trace with\n  hybrid-prof import-kineto --db DB rank0.json.gz "
        "rank1.json.gz ...\nto see a GPU run here.");
    return;
  }
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(colors::kDimText), "· %zu rank%s with GPU records%s", s.ranks.size(),
                     s.ranks.size() == 1 ? "" : "s",
                     s.from_events ? " (analysed from the run's events)" : "");
  help_marker(
      "Times are unions over all of a rank's streams (two kernels at once count once).\n"
      "Communication: kernels named nccl/rccl; memory: memcpy and memset; computation: other "
      "kernels.\n"
      "Non-compute: communication or memory work runs and no computation does.\n"
      "Overlap: the share of communication time during which computation runs.\n"
      "Definitions: docs/profiler.md, \"GPU timeline\".");
  draw_temporal(s);
  draw_overlap(s);
  draw_kinds(s);
  draw_top_kernels(s, top_rank_index_);
}

}  // namespace hybrid::gui
