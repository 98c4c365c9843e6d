// Run overview: the run's facts and headline figures, the loss / loss-scale /
// step-time / tokens-per-second curves with skipped steps marked, and memory by
// category (current, peak, predicted).
#include <fmt/format.h>
#include <imgui.h>

#include <cmath>

#include "gui/view/app.h"
#include "gui/view/plot.h"
#include "gui/view/theme.h"

namespace hybrid::gui {

namespace {

void fact(const char* label, const std::string& value) {
  ImGui::TableNextColumn();
  ImGui::TextColored(to_vec4(colors::kDimText), "%s", label);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(value.c_str());
}

void draw_facts(const RunOverview& o) {
  const auto& r = o.run;
  if (!ImGui::BeginTable("##facts", 8, ImGuiTableFlags_SizingStretchProp)) return;
  fact("run", fmt::format("#{} {}", r.id, r.name));
  fact("status",
       std::string(profiler::to_string(r.status)) + (r.error.empty() ? "" : ": " + r.error));
  const bool backend_named = r.device.find(r.backend) != std::string::npos;
  fact("device", backend_named ? fmt::format("{} × {}", r.device, r.world_size)
                               : fmt::format("{} ({}) × {}", r.device, r.backend, r.world_size));
  fact("model", fmt::format("{} params, seq {}", format_count(double(r.n_params)), r.seq_len));
  fact("precision", fmt::format("{} · ZeRO {}", r.dtype, r.zero_stage));
  fact("batch",
       fmt::format("mb {} × gas {} × {} ranks", r.micro_batch, r.grad_accum, r.world_size));
  fact("step time", fmt::format("{} (median of {})", format_ms(o.median_step_ms), o.steps));
  fact("throughput", fmt::format("{:.0f} tokens/s", o.median_tokens_per_s));
  fact("achieved", format_flop_rate(o.median_flops_per_s));
  // A run that ended on NaN says so rather than showing its last finite loss as final.
  const std::string finite = o.final_loss ? fmt::format("{:.4f}", *o.final_loss) : "-";
  fact("final loss", o.last_loss_finite ? finite : "nan (last finite " + finite + ")");
  fact("skipped steps", fmt::format("{}", o.skipped_steps.size()));
  fact("build", fmt::format("{} {}", r.hybrid_version, r.git_revision));
  ImGui::EndTable();
}

// One category: its figures, and its peak as a bar (scaled to `scale`) with the
// prediction as a mark.
void draw_memory_row(const MemoryCategory& m, uint64_t scale) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(m.category.c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format_bytes(m.current_bytes).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format_bytes(m.peak_bytes).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(m.predicted_bytes ? format_bytes(*m.predicted_bytes).c_str() : "-");
  ImGui::TableNextColumn();
  if (m.predicted_bytes && *m.predicted_bytes > 0) {
    const double ratio = double(m.peak_bytes) / double(*m.predicted_bytes);
    ImGui::TextColored(to_vec4(ratio > 1.05 ? colors::kError : colors::kText), "%.2f×", ratio);
  } else {
    ImGui::TextUnformatted("-");
  }
  ImGui::TableNextColumn();
  ImGui::Text("%d", m.peak_rank);
  ImGui::TableNextColumn();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  stacked_bar(dl, p, ImVec2(p.x + w, p.y + h), {{double(m.peak_bytes), colors::kForward}},
              double(scale));
  if (m.predicted_bytes) {
    const float x = p.x + float(double(*m.predicted_bytes) / double(scale)) * w;
    dl->AddLine(ImVec2(x, p.y - 1), ImVec2(x, p.y + h + 1), colors::kHighlight, 2.0f);
  }
  ImGui::Dummy(ImVec2(w, h));
}

void draw_memory(const RunOverview& o) {
  section("Memory by category (largest rank)");
  if (o.memory.empty()) {
    ImGui::TextColored(to_vec4(colors::kDimText), "no memory rows in this run");
    return;
  }
  uint64_t scale = 1;
  for (const auto& m : o.memory)
    scale = std::max({scale, m.peak_bytes, m.current_bytes, m.predicted_bytes.value_or(0)});
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("##memory", 7, flags)) return;
  ImGui::TableSetupColumn("category");
  ImGui::TableSetupColumn("current");
  ImGui::TableSetupColumn("peak");
  ImGui::TableSetupColumn("predicted");
  ImGui::TableSetupColumn("peak / predicted");
  ImGui::TableSetupColumn("peak rank");
  ImGui::TableSetupColumn("peak (bar) vs predicted (mark)", ImGuiTableColumnFlags_WidthStretch,
                          3.0f);
  ImGui::TableHeadersRow();
  for (const auto& m : o.memory) draw_memory_row(m, scale);
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextColored(to_vec4(colors::kDimText), "total");
  ImGui::TableNextColumn();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format_bytes(o.peak_total_bytes).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(o.predicted_total_bytes ? format_bytes(*o.predicted_total_bytes).c_str()
                                                 : "-");
  ImGui::EndTable();
}

// Loss, loss scale, step time and throughput by step, the skipped steps marked.
void draw_step_plots(const RunOverview& o) {
  std::vector<double> skipped(o.skipped_steps.begin(), o.skipped_steps.end());
  const float h = std::max(150.0f, (ImGui::GetContentRegionAvail().y - 230) / 2);
  if (ImGui::BeginTable("##plots", 2, ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableNextColumn();
    PlotOptions skipped_marks;
    skipped_marks.markers_x = skipped;
    skipped_marks.marker_color = colors::kError;
    skipped_marks.marker_label = "skipped (overflow)";
    skipped_marks.height = h;
    PlotOptions loss = skipped_marks;
    loss.title = "loss";
    line_plot("loss", {{&o.loss.x, &o.loss.y, colors::kForward, "loss"}}, loss);
    ImGui::TableNextColumn();
    PlotOptions scale = skipped_marks;
    scale.title = "loss scale (log2)";
    scale.log_y = true;
    line_plot("scale", {{&o.loss_scale.x, &o.loss_scale.y, colors::kOptimizer, "loss scale"}},
              scale);
    ImGui::TableNextColumn();
    // A copy without the marks, not a default-constructed one: assigning "ms" to
    // the latter trips GCC 12's -Wmaybe-uninitialized with AVX-512 codegen (a
    // false positive, seen with -march=native on a Sapphire Rapids Xeon).
    PlotOptions step = skipped_marks;
    step.markers_x.clear();
    step.marker_label.clear();
    step.title = "step time";
    step.unit = "ms";
    step.y_from_zero = true;
    line_plot("step", {{&o.step_ms.x, &o.step_ms.y, colors::kBackward, "ms / step"}}, step);
    ImGui::TableNextColumn();
    PlotOptions tok = skipped_marks;
    tok.title = "throughput";
    tok.unit = "tokens/s";
    tok.y_from_zero = true;
    line_plot("tok", {{&o.tokens_per_s.x, &o.tokens_per_s.y, colors::kGood, "tokens/s"}}, tok);
    ImGui::EndTable();
  }
}

// An imported trace is a few profiled steps of a job, not a training run: it has
// no step rows (loss, throughput) and no memory rows, so it gets facts of its own.
void draw_imported(const RunView& run) {
  const auto& r = run.data.profile.run;
  if (ImGui::BeginTable("##facts", 8, ImGuiTableFlags_SizingStretchProp)) {
    fact("run", fmt::format("#{} {}", r.id, r.name));
    fact("status", std::string(profiler::to_string(r.status)));
    fact("source", r.source == "kineto" ? "PyTorch profiler trace (kineto)" : r.source);
    fact("device", fmt::format("{} ({})", r.device.empty() ? "-" : r.device, r.backend));
    fact("ranks", fmt::format("{} traced of {}", run.data.profile.ranks.size(), r.world_size));
    std::string steps;
    for (int64_t s : run.layers.profiled_steps)
      steps += fmt::format("{}{}", steps.empty() ? "" : ", ", s);
    fact("profiler steps", steps.empty() ? "-" : steps);
    fact("GPU records", fmt::format("{} rank(s)", run.gpu.ranks.size()));
    // The traced hosts (the run's own host is the machine that imported it).
    std::string hosts;
    for (const auto& rank : run.data.profile.ranks)
      if (!rank.host.empty() && hosts.find(rank.host) == std::string::npos)
        hosts += (hosts.empty() ? "" : ", ") + rank.host;
    fact("traced on", hosts.empty() ? "-" : hosts);
    ImGui::EndTable();
  }
  ImGui::Spacing();
  ImGui::PushTextWrapPos(0.0f);  // wrap at the window's edge
  ImGui::TextColored(
      to_vec4(colors::kDimText),
      "An imported trace has no training steps (loss, throughput) and no memory rows: its "
      "module times are in the Layer breakdown (device time), its streams in the Step "
      "timeline, and how each GPU spent its time in GPU.");
  ImGui::PopTextWrapPos();
}

}  // namespace

void draw_overview_window(App& app) {
  RunView* run = app.run();
  if (!run) {
    ImGui::TextColored(to_vec4(colors::kDimText),
                       "No run selected (the database has no runs yet).");
    return;
  }
  if (run->data.profile.run.source != "hybrid") {
    draw_imported(*run);
    return;
  }
  const RunOverview& o = run->overview;
  draw_facts(o);
  ImGui::Spacing();
  if (o.steps == 0)
    ImGui::TextColored(to_vec4(colors::kDimText), "no steps recorded yet");
  else
    draw_step_plots(o);
  if (!o.skipped_steps.empty()) {
    std::string list;
    for (int64_t s : o.skipped_steps) list += fmt::format("{}{}", list.empty() ? "" : ", ", s);
    ImGui::TextColored(to_vec4(colors::kError),
                       "skipped steps (gradients not finite: overflow or divergence): %s",
                       list.c_str());
  }
  draw_memory(o);
}

}  // namespace hybrid::gui
