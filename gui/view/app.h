// The viewer: one database, the run being looked at (and the one it is compared
// with), and the windows, each a thin view over a view-model of gui/model. The
// host calls frame() once per frame; frame() also polls the database (about once
// a second) so a sweep that is still writing shows up as it goes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gui/model/comm_model.h"
#include "gui/model/compare_model.h"
#include "gui/model/database.h"
#include "gui/model/gpu_summary.h"
#include "gui/model/layer_breakdown.h"
#include "gui/model/run_overview.h"
#include "gui/model/sweep_model.h"
#include "gui/model/timeline_model.h"

namespace hybrid::gui {

enum class WindowId { sweeps, overview, layers, timeline, collectives, gpu, compare, generation };
inline constexpr WindowId kAllWindows[] = {
    WindowId::sweeps,      WindowId::overview, WindowId::layers,  WindowId::timeline,
    WindowId::collectives, WindowId::gpu,      WindowId::compare, WindowId::generation};
std::string_view window_name(WindowId w);  // "layers", ...
// Accepts the names above; throws std::invalid_argument listing them otherwise.
WindowId parse_window(std::string_view name);

// One loaded run and every view-model computed from it.
struct RunView {
  RunData data;
  RunOverview overview;
  LayerOptions layer_options;
  LayerBreakdown layers;
  CommSummary comm;
  GpuSummary gpu;
  TimelineModel timeline;
  std::optional<int64_t> timeline_step;  // empty: every profiled step
  std::string error;                     // a view-model that could not be built
  void rebuild_layers();
  void rebuild_timeline();
};

struct AppOptions {
  std::string db_path;
  std::optional<int64_t> run;
  std::optional<int64_t> compare_run;
  double poll_interval_s = 1.0;
};

class SweepsWindow;
class LayersWindow;
class TimelineWindow;
class GpuWindow;

class App {
 public:
  explicit App(const AppOptions& options);
  ~App();

  // Draws one frame of the whole viewer (inside ImGui::NewFrame/Render).
  void frame();
  void show_window(WindowId w) { pending_window_ = w; }

  // --- state shared by the windows ------------------------------------------
  void open_database(const std::string& path);
  Database* database() { return db_.get(); }
  const std::string& db_error() const;
  void select_run(int64_t run_id);
  void select_compare_run(int64_t run_id);
  RunView* run() { return run_.get(); }
  RunView* compare_run() { return compare_.get(); }
  int32_t selected_module = -1;  // highlighted in the layer table and the timeline
  std::string selected_module_name;
  void select_module(int32_t module_id, std::string name) {
    selected_module = module_id;
    selected_module_name = std::move(name);
  }
  std::string run_label(const profiler::RunInfo& r) const;

 private:
  void poll();
  void draw_top_bar();
  void draw_error_panel();
  void draw_window(WindowId w);  // one tab's content
  std::unique_ptr<RunView> load(int64_t run_id);
  bool find_or_report(int64_t run_id);  // false, with the error, for a run not in the store
  std::optional<int64_t> default_run() const;
  std::optional<int64_t> default_compare_run() const;

  AppOptions options_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<RunView> run_, compare_;
  std::string path_input_;
  std::optional<WindowId> pending_window_;
  std::chrono::steady_clock::time_point last_poll_;
  std::chrono::steady_clock::time_point last_change_;
  std::unique_ptr<SweepsWindow> sweeps_;
  std::unique_ptr<LayersWindow> layers_;
  std::unique_ptr<TimelineWindow> timeline_;
  std::unique_ptr<GpuWindow> gpu_;
  std::string load_error_;
};

// The windows (each in its own file).
void draw_overview_window(App& app);
void draw_collectives_window(App& app);
void draw_compare_window(App& app);
void draw_generation_window(App& app);

}  // namespace hybrid::gui
