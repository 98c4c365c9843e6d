// The window the viewer draws into: GLFW + an OpenGL 3.3 core context + Dear
// ImGui with its GLFW and OpenGL3 backends, and a screenshot of the frame
// (glReadPixels before the swap, flipped, written as PNG). Needs an X display
// (a real one or Xvfb); GlHost::display_available() tells before trying.
#pragma once

#include <filesystem>
#include <string>

struct GLFWwindow;

namespace hybrid::gui {

struct HostOptions {
  int width = 1280;
  int height = 800;
  std::string title = "hybrid-view";
  bool vsync = true;          // off for screenshots and the benchmark
  bool save_settings = true;  // imgui.ini; off in tests
  float font_px = 15.0f;
  bool ignore_mouse = false;  // screenshots: the pointer Xvfb parks mid-screen must not hover
};

class GlHost {
 public:
  // Throws std::runtime_error naming what failed (no display, no GL 3.3 context).
  explicit GlHost(const HostOptions& options);
  ~GlHost();
  GlHost(const GlHost&) = delete;
  GlHost& operator=(const GlHost&) = delete;

  static bool display_available();  // an X display to connect to (DISPLAY set)

  bool should_close() const;
  void poll_events(bool wait);  // wait: block until an event or a short timeout
  void begin_frame();           // backends' NewFrame + ImGui::NewFrame
  void render();                // ImGui::Render + draw into the back buffer
  void swap();
  // Writes the back buffer (call between render() and swap()) as a PNG of the
  // framebuffer's size, via a temporary file and a rename. Throws on failure.
  void save_png(const std::filesystem::path& path) const;
  void framebuffer_size(int& w, int& h) const;

 private:
  GLFWwindow* window_ = nullptr;
  bool imgui_ready_ = false;
  bool ignore_mouse_ = false;
  bool font_nearest_ = false;
};

}  // namespace hybrid::gui
