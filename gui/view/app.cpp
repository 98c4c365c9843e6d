#include "gui/view/app.h"

#include <fmt/format.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "gui/view/theme.h"
#include "gui/view/windows.h"

namespace hybrid::gui {

std::string_view window_name(WindowId w) {
  switch (w) {
    case WindowId::sweeps:
      return "sweeps";
    case WindowId::overview:
      return "overview";
    case WindowId::layers:
      return "layers";
    case WindowId::timeline:
      return "timeline";
    case WindowId::collectives:
      return "collectives";
    case WindowId::gpu:
      return "gpu";
    case WindowId::compare:
      return "compare";
    case WindowId::generation:
      return "generation";
  }
  return "?";
}

WindowId parse_window(std::string_view name) {
  for (WindowId w : kAllWindows)
    if (window_name(w) == name) return w;
  throw std::invalid_argument(fmt::format(
      "--window: unknown window '{}' (one of sweeps, overview, layers, timeline, collectives, "
      "gpu, compare, generation, all)",
      name));
}

void RunView::rebuild_layers() {
  try {
    layers = build_layer_breakdown(data.profile, data.events, layer_options);
  } catch (const std::exception& e) {
    error = e.what();
    layer_options = {};
    layers = build_layer_breakdown(data.profile, data.events, layer_options);
  }
}

void RunView::rebuild_timeline() {
  timeline = build_timeline(data.events, data.profile.ranks, timeline_step);
}

App::App(const AppOptions& o) : options_(o) {
  sweeps_ = std::make_unique<SweepsWindow>();
  layers_ = std::make_unique<LayersWindow>();
  timeline_ = std::make_unique<TimelineWindow>();
  gpu_ = std::make_unique<GpuWindow>();
  open_database(o.db_path);
  if (db_ && db_->is_open()) {
    if (auto id = o.run ? o.run : default_run()) select_run(*id);
    if (auto id = o.compare_run ? o.compare_run : default_compare_run()) select_compare_run(*id);
  }
}

App::~App() = default;

void App::open_database(const std::string& path) {
  path_input_ = path;
  run_.reset();
  compare_.reset();
  load_error_.clear();
  selected_module = -1;
  db_ = std::make_unique<Database>(path);
  last_poll_ = last_change_ = std::chrono::steady_clock::now();
  if (!db_->is_open()) std::cerr << "hybrid-view: " << db_->error() << "\n";
}

const std::string& App::db_error() const {
  static const std::string kNone;
  if (!load_error_.empty()) return load_error_;
  return db_ ? db_->error() : kNone;
}

std::unique_ptr<RunView> App::load(int64_t run_id) {
  auto data = db_->load_run(run_id);
  if (!data) {
    load_error_ = db_->error();
    std::cerr << "hybrid-view: " << load_error_ << "\n";
    return nullptr;
  }
  auto v = std::make_unique<RunView>();
  v->data = std::move(*data);
  v->overview = build_run_overview(v->data.profile);
  v->comm = build_comm_summary(v->data.profile);
  v->gpu = build_gpu_summary(v->data.profile, v->data.events);
  v->rebuild_layers();
  v->rebuild_timeline();
  return v;
}

// A selection replaces the last one's error; loading the other run (compare)
// does not, so "--run 999" is still an error once the default comparison loaded.
void App::select_run(int64_t run_id) {
  if (!db_ || !db_->is_open()) return;
  load_error_.clear();
  if (!find_or_report(run_id)) return;
  run_ = load(run_id);
  selected_module = -1;
}

void App::select_compare_run(int64_t run_id) {
  if (!db_ || !db_->is_open() || !find_or_report(run_id)) return;
  compare_ = load(run_id);
}

bool App::find_or_report(int64_t run_id) {
  if (db_->find_run(run_id)) return true;
  load_error_ = fmt::format("{} has no run {}", db_->path().string(), run_id);
  std::cerr << "hybrid-view: " << load_error_ << "\n";
  return false;
}

std::optional<int64_t> App::default_run() const {
  // The newest run: during a sweep, the trial that is running now.
  const auto& runs = db_->runs();
  if (runs.empty()) return std::nullopt;
  return runs.back().id;
}

std::optional<int64_t> App::default_compare_run() const {
  const auto& runs = db_->runs();
  const int64_t current = run_ ? run_->data.profile.run.id : -1;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    if (it->id != current) return it->id;
  return std::nullopt;
}

std::string App::run_label(const profiler::RunInfo& r) const {
  if (r.source != "hybrid")
    return fmt::format("#{} {} ({}, imported from {}, {} × {})", r.id, r.name,
                       profiler::to_string(r.status), r.source, r.world_size,
                       r.backend.empty() ? "rank" : r.backend);
  return fmt::format("#{} {} ({}, {}×{} ZeRO {} mb {} gas {})", r.id, r.name,
                     profiler::to_string(r.status), r.world_size,
                     r.backend.empty() ? "rank" : r.backend, r.zero_stage, r.micro_batch,
                     r.grad_accum);
}

void App::poll() {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_poll_).count() < options_.poll_interval_s) return;
  last_poll_ = now;
  if (!db_ || !db_->is_open()) return;
  if (!db_->refresh()) return;
  last_change_ = now;
  // Follow the runs being written: re-read a shown run when it changed.
  auto reload = [&](std::unique_ptr<RunView>& v) {
    if (!v || !db_->run_changed(v->data)) return;
    auto fresh = load(v->data.profile.run.id);
    if (!fresh) return;
    fresh->layer_options = v->layer_options;
    fresh->timeline_step = v->timeline_step;
    fresh->rebuild_layers();
    fresh->rebuild_timeline();
    v = std::move(fresh);
  };
  reload(run_);
  reload(compare_);
  if (!run_)
    if (auto id = default_run()) select_run(*id);
}

void App::draw_top_bar() {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Database");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(280);
  const bool enter = ImGui::InputText("##db", &path_input_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("Open") || enter) {
    const std::string p = path_input_;
    open_database(p);
    if (db_->is_open())
      if (auto id = default_run()) select_run(*id);
  }
  if (!db_ || !db_->is_open()) return;
  ImGui::SameLine();
  ImGui::TextUnformatted("Run");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(520);
  const std::string current = run_ ? run_label(run_->data.profile.run) : "(no run)";
  if (ImGui::BeginCombo("##run", current.c_str())) {
    for (auto it = db_->runs().rbegin(); it != db_->runs().rend(); ++it) {
      const bool sel = run_ && run_->data.profile.run.id == it->id;
      if (ImGui::Selectable(run_label(*it).c_str(), sel)) select_run(it->id);
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  const double since =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_change_).count();
  ImGui::TextColored(to_vec4(colors::kDimText), "%zu runs · %zu sweeps · updated %.0f s ago",
                     db_->runs().size(), db_->sweeps().size(), since);
}

void App::draw_error_panel() {
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, to_vec4(colors::kError));
  ImGui::TextUnformatted("Cannot show this database");
  ImGui::PopStyleColor();
  ImGui::Separator();
  ImGui::PushTextWrapPos(ImGui::GetContentRegionAvail().x);
  ImGui::TextUnformatted(db_error().c_str());
  ImGui::PopTextWrapPos();
  ImGui::Spacing();
  ImGui::TextColored(
      to_vec4(colors::kDimText),
      "hybrid-view opens hybrid run stores (SQLite, written by hybrid-train --db and "
      "hybrid-tune) read-only and never modifies them. Enter another path above.");
}

void App::draw_window(WindowId w) {
  switch (w) {
    case WindowId::sweeps:
      sweeps_->draw(*this);
      break;
    case WindowId::overview:
      draw_overview_window(*this);
      break;
    case WindowId::layers:
      layers_->draw(*this);
      break;
    case WindowId::timeline:
      timeline_->draw(*this);
      break;
    case WindowId::collectives:
      draw_collectives_window(*this);
      break;
    case WindowId::gpu:
      gpu_->draw(*this);
      break;
    case WindowId::compare:
      draw_compare_window(*this);
      break;
    case WindowId::generation:
      draw_generation_window(*this);
      break;
  }
}

void App::frame() {
  poll();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::Begin("hybrid-view", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBackground);  // GlHost clears to WindowBg: one fill, not two
  draw_top_bar();
  if (!db_ || !db_->is_open()) {
    draw_error_panel();
    ImGui::End();
    return;
  }
  if (!db_error().empty()) {
    ImGui::TextColored(to_vec4(colors::kError), "%s", db_error().c_str());
  }
  if (ImGui::BeginTabBar("##windows")) {
    for (WindowId w : kAllWindows) {
      static const char* titles[] = {"Sweeps & trials", "Run overview", "Layer breakdown",
                                     "Step timeline",   "Collectives",  "GPU",
                                     "Compare",         "Generation"};
      ImGuiTabItemFlags flags = 0;
      if (pending_window_ == w) flags |= ImGuiTabItemFlags_SetSelected;
      if (!ImGui::BeginTabItem(titles[int(w)], nullptr, flags)) continue;
      ImGui::BeginChild("##content", ImVec2(0, 0), false);
      draw_window(w);
      ImGui::EndChild();
      ImGui::EndTabItem();
    }
    pending_window_.reset();
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace hybrid::gui
