#include "gui/view/gl_host.h"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <cfloat>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "gui/view/theme.h"

namespace hybrid::gui {

namespace {

std::string last_glfw_error() {
  const char* msg = nullptr;
  glfwGetError(&msg);
  return msg ? msg : "unknown GLFW error";
}

}  // namespace

bool GlHost::display_available() {
  const char* d = std::getenv("DISPLAY");
  return d && *d;
}

GlHost::GlHost(const HostOptions& o) : ignore_mouse_(o.ignore_mouse) {
  if (!glfwInit())
    throw std::runtime_error("cannot start GLFW (" + last_glfw_error() +
                             "); is there an X display? run under xvfb-run for screenshots");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  window_ = glfwCreateWindow(o.width, o.height, o.title.c_str(), nullptr, nullptr);
  if (!window_) {
    const std::string why = last_glfw_error();
    glfwTerminate();
    throw std::runtime_error("cannot create a " + std::to_string(o.width) + "x" +
                             std::to_string(o.height) + " window with OpenGL 3.3 core: " + why);
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(o.vsync ? 1 : 0);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  if (!o.save_settings) io.IniFilename = nullptr;
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  apply_theme(o.font_px);
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  imgui_ready_ = true;
}

GlHost::~GlHost() {
  if (imgui_ready_) {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
  }
  if (window_) glfwDestroyWindow(window_);
  glfwTerminate();
}

bool GlHost::should_close() const { return glfwWindowShouldClose(window_); }

void GlHost::poll_events(bool wait) {
  if (wait)
    glfwWaitEventsTimeout(0.25);  // wakes up to poll the database even when idle
  else
    glfwPollEvents();
}

void GlHost::begin_frame() {
  ImGui_ImplOpenGL3_NewFrame();
  if (!font_nearest_) {
    // ImGui draws every shape through its font texture (the white texel). Text is
    // pixel-aligned, so nearest filtering looks the same, and Mesa's software
    // rasteriser fetches one texel per pixel instead of four.
    const auto tex = static_cast<GLuint>(reinterpret_cast<intptr_t>(ImGui::GetIO().Fonts->TexID));
    if (tex != 0) {
      glBindTexture(GL_TEXTURE_2D, tex);
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
      font_nearest_ = true;
    }
  }
  ImGui_ImplGlfw_NewFrame();
  if (ignore_mouse_) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  ImGui::NewFrame();
}

void GlHost::render() {
  ImGui::Render();
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  glViewport(0, 0, w, h);
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  glClearColor(bg.x, bg.y, bg.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void GlHost::swap() { glfwSwapBuffers(window_); }

void GlHost::framebuffer_size(int& w, int& h) const { glfwGetFramebufferSize(window_, &w, &h); }

void GlHost::save_png(const std::filesystem::path& path) const {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  std::vector<unsigned char> pixels(size_t(w) * size_t(h) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  // Encoded into the atomic writer: a reader (the tests, a script polling for the
  // file) sees the complete PNG or none; the writer creates missing folders.
  struct Sink {
    base::AtomicFileWriter file;
    std::string error;  // exceptions must not cross stb's C frames
  } sink{base::AtomicFileWriter(path.string()), {}};
  auto write = [](void* context, void* data, int bytes) {
    auto* s = static_cast<Sink*>(context);
    if (!s->error.empty()) return;
    try {
      s->file.write(data, size_t(bytes));
    } catch (const std::exception& e) {
      s->error = e.what();
    }
  };
  stbi_flip_vertically_on_write(1);  // GL rows start at the bottom
  if (!stbi_write_png_to_func(write, &sink, w, h, 3, pixels.data(), w * 3) || !sink.error.empty())
    throw std::runtime_error("cannot write screenshot " + path.string() + ": " + sink.error);
  sink.file.commit();
}

}  // namespace hybrid::gui
