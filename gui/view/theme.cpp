#include "gui/view/theme.h"

#include <filesystem>

namespace hybrid::gui {

void apply_theme(float font_px) {
  ImGui::StyleColorsDark();
  ImGuiStyle& s = ImGui::GetStyle();
  s.WindowRounding = 0;
  s.FrameRounding = 3;
  s.TabRounding = 3;
  s.CellPadding = ImVec2(6, 3);
  s.ItemSpacing = ImVec2(8, 5);
  s.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.095f, 0.11f, 1.0f);
  // Transparent: the window behind shows through, and Mesa's software rasteriser
  // does not fill the screen once more per child window.
  s.Colors[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);
  s.Colors[ImGuiCol_TableRowBgAlt] = ImVec4(1, 1, 1, 0.025f);
  s.Colors[ImGuiCol_Header] = ImVec4(0.26f, 0.42f, 0.66f, 0.45f);
  ImGuiIO& io = ImGui::GetIO();
  for (const char* path : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                           "/usr/share/fonts/dejavu/DejaVuSans.ttf"}) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;
    // Latin plus the few symbols the viewer prints (·, –, Δ, ×, ≥).
    static const ImWchar ranges[] = {0x0020, 0x00FF, 0x0394, 0x0394, 0x2013, 0x2014, 0x2022,
                                     0x2022, 0x2190, 0x2193, 0x2229, 0x2229, 0x2264, 0x2265,
                                     0x00D7, 0x00D7, 0x25A0, 0x25A0, 0x25CF, 0x25CF, 0};
    if (io.Fonts->AddFontFromFileTTF(path, font_px, nullptr, ranges)) return;
  }
  io.Fonts->AddFontDefault();
}

ImU32 category_color(profiler::Category c) {
  using profiler::Category;
  switch (c) {
    case Category::step:
      return IM_COL32(110, 110, 120, 255);
    case Category::forward:
      return colors::kForward;
    case Category::backward:
      return colors::kBackward;
    case Category::optimizer:
      return colors::kOptimizer;
    case Category::comm:
      return IM_COL32(171, 99, 201, 255);
    case Category::data:
      return IM_COL32(118, 183, 178, 255);
    case Category::kernel:
      return IM_COL32(237, 201, 72, 255);
    case Category::memcpy:
      return IM_COL32(255, 157, 167, 255);
    case Category::other:
      return IM_COL32(186, 176, 172, 255);
    case Category::recompute:
      return colors::kRecompute;
    case Category::prefill:
      return IM_COL32(89, 161, 79, 255);
    case Category::decode:
      return IM_COL32(134, 188, 182, 255);
  }
  return colors::kOther;
}

ImU32 zero_stage_color(int stage) {
  switch (stage) {
    case 0:
      return IM_COL32(160, 160, 170, 255);
    case 1:
      return IM_COL32(76, 139, 214, 255);
    case 2:
      return IM_COL32(232, 145, 58, 255);
    case 3:
      return IM_COL32(89, 178, 112, 255);
    default:
      return IM_COL32(200, 200, 200, 255);
  }
}

ImVec4 to_vec4(ImU32 c) { return ImGui::ColorConvertU32ToFloat4(c); }

void section(const char* title) {
  ImGui::Spacing();
  ImGui::TextColored(to_vec4(colors::kDimText), "%s", title);
  ImGui::Separator();
}

void help_marker(const char* text) {
  ImGui::SameLine();
  ImGui::TextColored(to_vec4(colors::kDimText), "(?)");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text);
}

}  // namespace hybrid::gui
