// Solid rectangles for the timeline, drawn by a flat-colour shader from inside
// an ImDrawList callback (so they stay in order with the list's other shapes and
// use its clip rectangle). ImGui's own shader samples the font texture for every
// pixel; on Mesa's software rasteriser a plain colour fills the timeline's boxes
// several times faster. Needs the GL 3.3 context GlHost makes.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <vector>

namespace hybrid::gui {

class BoxRenderer {
 public:
  BoxRenderer() = default;
  ~BoxRenderer();
  BoxRenderer(const BoxRenderer&) = delete;
  BoxRenderer& operator=(const BoxRenderer&) = delete;

  void clear() { verts_.clear(); }
  void add(ImVec2 min, ImVec2 max, ImU32 color);  // opaque: alpha is ignored
  size_t boxes() const { return verts_.size() / 6; }
  // Draws the boxes added so far when `dl` is rendered, clipped by its current
  // clip rectangle; they must stay untouched until then (the next clear()).
  void submit(ImDrawList* dl);

 private:
  struct Vertex {
    float x, y;
    ImU32 color;
  };
  static void draw_callback(const ImDrawList* list, const ImDrawCmd* cmd);
  void draw(const ImDrawCmd* cmd);
  bool ensure_gl();

  std::vector<Vertex> verts_;
  unsigned program_ = 0, vao_ = 0, vbo_ = 0;
  int proj_ = -1;
  bool failed_ = false;
};

}  // namespace hybrid::gui
