#include "gui/view/box_renderer.h"

#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>

#include <cstdio>

namespace hybrid::gui {

namespace {

constexpr const char* kVertex = R"(#version 330 core
layout(location = 0) in vec2 pos;
layout(location = 1) in vec4 color;
uniform mat4 proj;
out vec4 frag_color;
void main() { frag_color = color; gl_Position = proj * vec4(pos, 0.0, 1.0); }
)";

constexpr const char* kFragment = R"(#version 330 core
in vec4 frag_color;
out vec4 out_color;
void main() { out_color = vec4(frag_color.rgb, 1.0); }
)";

GLuint compile(GLenum kind, const char* src) {
  const GLuint s = glCreateShader(kind);
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[512] = {};
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    std::fprintf(stderr, "hybrid-view: box shader: %s\n", log);
    glDeleteShader(s);
    return 0;
  }
  return s;
}

}  // namespace

BoxRenderer::~BoxRenderer() {
  // The context may be gone already at exit; GL ignores names it does not know.
  if (program_) glDeleteProgram(program_);
  if (vbo_) glDeleteBuffers(1, &vbo_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
}

void BoxRenderer::add(ImVec2 a, ImVec2 b, ImU32 c) {
  verts_.push_back({a.x, a.y, c});
  verts_.push_back({b.x, a.y, c});
  verts_.push_back({b.x, b.y, c});
  verts_.push_back({a.x, a.y, c});
  verts_.push_back({b.x, b.y, c});
  verts_.push_back({a.x, b.y, c});
}

void BoxRenderer::submit(ImDrawList* dl) {
  if (verts_.empty()) return;
  dl->AddCallback(&BoxRenderer::draw_callback, this);
  dl->AddCallback(ImDrawCallback_ResetRenderState, nullptr);  // ImGui's GL state back
}

void BoxRenderer::draw_callback(const ImDrawList*, const ImDrawCmd* cmd) {
  static_cast<BoxRenderer*>(cmd->UserCallbackData)->draw(cmd);
}

bool BoxRenderer::ensure_gl() {
  if (program_) return true;
  if (failed_) return false;
  const GLuint vs = compile(GL_VERTEX_SHADER, kVertex), fs = compile(GL_FRAGMENT_SHADER, kFragment);
  if (!vs || !fs) {
    failed_ = true;
    return false;
  }
  program_ = glCreateProgram();
  glAttachShader(program_, vs);
  glAttachShader(program_, fs);
  glLinkProgram(program_);
  glDeleteShader(vs);
  glDeleteShader(fs);
  proj_ = glGetUniformLocation(program_, "proj");
  glGenVertexArrays(1, &vao_);
  glGenBuffers(1, &vbo_);
  glBindVertexArray(vao_);
  glBindBuffer(GL_ARRAY_BUFFER, vbo_);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(Vertex),
                        reinterpret_cast<void*>(offsetof(Vertex, x)));
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(Vertex),
                        reinterpret_cast<void*>(offsetof(Vertex, color)));
  glBindVertexArray(0);
  return true;
}

void BoxRenderer::draw(const ImDrawCmd* cmd) {
  if (!ensure_gl()) return;
  const ImDrawData* dd = ImGui::GetDrawData();
  const float l = dd->DisplayPos.x, r = l + dd->DisplaySize.x, t = dd->DisplayPos.y,
              b = t + dd->DisplaySize.y;
  const float proj[16] = {2 / (r - l), 0, 0, 0,  0, 2 / (t - b),       0,
                          0,           0, 0, -1, 0, (r + l) / (l - r), (t + b) / (b - t),
                          0,           1};
  const ImVec2 scale = dd->FramebufferScale;
  const float fb_h = dd->DisplaySize.y * scale.y;
  const ImVec4 c = cmd->ClipRect;
  glEnable(GL_SCISSOR_TEST);
  glScissor(GLint((c.x - l) * scale.x), GLint(fb_h - (c.w - t) * scale.y),
            GLsizei((c.z - c.x) * scale.x), GLsizei((c.w - c.y) * scale.y));
  glDisable(GL_BLEND);  // opaque boxes: no framebuffer read-back
  glUseProgram(program_);
  glUniformMatrix4fv(proj_, 1, GL_FALSE, proj);
  glBindVertexArray(vao_);
  glBindBuffer(GL_ARRAY_BUFFER, vbo_);
  glBufferData(GL_ARRAY_BUFFER, GLsizeiptr(verts_.size() * sizeof(Vertex)), verts_.data(),
               GL_STREAM_DRAW);
  glDrawArrays(GL_TRIANGLES, 0, GLsizei(verts_.size()));
}

}  // namespace hybrid::gui
