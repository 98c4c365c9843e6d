// Colours, fonts and number formats shared by every window: one colour per event
// category and per ZeRO stage, so the timeline, the bars and the legends agree,
// and numbers written as every tool writes them.
#pragma once

#include <imgui.h>

#include "base/units.h"
#include "gui/model/layer_breakdown.h"
#include "profiler/event.h"

namespace hybrid::gui {

// Dark theme, and DejaVu Sans at font_px when installed (ImGui's font otherwise).
void apply_theme(float font_px);

ImU32 category_color(profiler::Category c);
ImU32 zero_stage_color(int stage);  // -1: unknown

namespace colors {
inline constexpr ImU32 kForward = IM_COL32(76, 139, 214, 255);
inline constexpr ImU32 kBackward = IM_COL32(232, 145, 58, 255);
inline constexpr ImU32 kRecompute = IM_COL32(156, 117, 95, 255);  // checkpointed forwards again
inline constexpr ImU32 kExposed = IM_COL32(214, 69, 65, 255);
inline constexpr ImU32 kOther = IM_COL32(140, 140, 150, 255);
inline constexpr ImU32 kOptimizer = IM_COL32(89, 178, 112, 255);
inline constexpr ImU32 kGrid = IM_COL32(255, 255, 255, 28);
inline constexpr ImU32 kAxis = IM_COL32(255, 255, 255, 90);
inline constexpr ImU32 kText = IM_COL32(220, 220, 225, 255);
inline constexpr ImU32 kDimText = IM_COL32(150, 150, 160, 255);
inline constexpr ImU32 kHighlight = IM_COL32(255, 236, 110, 255);
inline constexpr ImU32 kError = IM_COL32(240, 90, 80, 255);
inline constexpr ImU32 kGood = IM_COL32(110, 200, 120, 255);
// The GPU window: how a device spent its time.
inline constexpr ImU32 kGpuIdle = IM_COL32(92, 94, 104, 255);
inline constexpr ImU32 kGpuCompute = IM_COL32(76, 175, 120, 255);
inline constexpr ImU32 kGpuNonCompute = IM_COL32(214, 120, 60, 255);
inline constexpr ImU32 kGpuComm = IM_COL32(171, 99, 201, 255);     // as collectives
inline constexpr ImU32 kGpuMemory = IM_COL32(255, 157, 167, 255);  // as memcpy events
}  // namespace colors

ImVec4 to_vec4(ImU32 c);

// Numbers with units (base/units.h).
using base::format_bytes;
using base::format_count;
using base::format_flop;
using base::format_flop_rate;
using base::format_ms;

// A titled separator between the parts of a window.
void section(const char* title);

// A dim "(?)" on the line just drawn, showing `text` (plain, not a format) when
// hovered.
void help_marker(const char* text);

}  // namespace hybrid::gui
