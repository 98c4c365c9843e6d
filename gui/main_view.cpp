// hybrid-view: the interactive profile viewer over a run store.
//   hybrid-view [results/hybrid.db] [--run N] [--compare N]
//   hybrid-view DB --screenshot out.png [--window NAME|all] [--frames N] [--size WxH]
// Exit status: 0 ok; 1 bad arguments or no display; 2 the database could not be
// opened or read, or has no run --run or --compare names (the window, and a
// screenshot, show why; stderr says it too).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "base/cli_checks.h"
#include "gui/view/app.h"
#include "gui/view/gl_host.h"

namespace {

using hybrid::gui::App;
using hybrid::gui::AppOptions;
using hybrid::gui::GlHost;
using hybrid::gui::HostOptions;
using hybrid::gui::WindowId;

bool parse_size(const std::string& s, int& w, int& h) {
  char x = 0;
  return std::sscanf(s.c_str(), "%d%c%d", &w, &x, &h) == 3 && (x == 'x' || x == 'X') && w >= 320 &&
         h >= 240 && w <= 8192 && h <= 8192;
}

std::string suffixed(const std::string& path, std::string_view name) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "_" + std::string(name) + p.extension().string()))
      .string();
}

void render_frames(GlHost& host, App& app, int frames) {
  for (int i = 0; i < frames; ++i) {
    host.poll_events(false);
    host.begin_frame();
    app.frame();
    host.render();
    if (i + 1 < frames) host.swap();
  }
}

struct ViewArgs {
  AppOptions app;
  std::string screenshot, window = "layers", size = "1280x800";
  int frames = 4;
};

void add_options(CLI::App& cli, ViewArgs& a, std::optional<int64_t>& run,
                 std::optional<int64_t>& compare) {
  cli.add_option("database", a.app.db_path,
                 "run store to open read-only (default results/hybrid.db)");
  cli.add_option("--run", run, "run to show (default: the newest)");
  cli.add_option("--compare", compare, "run to compare with (default: the newest other run)");
  cli.add_option(
      "--screenshot", a.screenshot,
      "render without interaction, write this PNG and exit (run under xvfb-run without a display)");
  cli.add_option(
      "--window", a.window,
      "window to screenshot: sweeps, overview, layers, timeline, collectives, gpu, compare, "
      "generation, or all "
      "(one PNG each, named OUT_<window>.png)");
  cli.add_option("--frames", a.frames, "frames to render before the screenshot (default 4)")
      ->check(hybrid::base::between(1, 1000));
  cli.add_option("--size", a.size, "window size WxH (default 1280x800)");
}

// Renders each window and writes its PNG; the exit status.
int screenshots(GlHost& host, App& app, const ViewArgs& a, const std::vector<WindowId>& windows) {
  for (WindowId w : windows) {
    app.show_window(w);
    render_frames(host, app, a.frames);
    const std::string out =
        windows.size() == 1 ? a.screenshot : suffixed(a.screenshot, window_name(w));
    host.save_png(out);
    host.swap();
    std::cout << "wrote " << out << "\n";
  }
  return app.db_error().empty() ? 0 : 2;
}

// --window: one window, or all of them in turn; nullopt (said) when unknown.
std::optional<std::vector<WindowId>> windows_asked(const std::string& window) {
  std::vector<WindowId> windows;
  try {
    if (window == "all")
      windows.assign(std::begin(hybrid::gui::kAllWindows), std::end(hybrid::gui::kAllWindows));
    else
      windows.push_back(hybrid::gui::parse_window(window));
  } catch (const std::exception& e) {
    std::cerr << "hybrid-view: " << e.what() << "\n";
    return std::nullopt;
  }
  return windows;
}

// The interactive viewer, or the screenshots asked for; main's exit status.
int show(const HostOptions& host_opts, const AppOptions& opts, const ViewArgs& args,
         const std::vector<WindowId>& windows) {
  try {
    GlHost host(host_opts);
    App app(opts);
    // What the command line asked for (the database, --run, --compare) could not
    // be shown: 2, even once the window moved on to another run.
    const int status = app.db_error().empty() ? 0 : 2;
    if (!args.screenshot.empty()) return std::max(status, screenshots(host, app, args, windows));
    app.show_window(windows.front());
    while (!host.should_close()) {
      host.poll_events(true);
      host.begin_frame();
      app.frame();
      host.render();
      host.swap();
    }
    return app.db_error().empty() ? status : 2;
  } catch (const std::exception& e) {
    std::cerr << "hybrid-view: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{
      "hybrid-view: interactive viewer of hybrid run stores (sweeps, runs, layers, timeline)"};
  ViewArgs args;
  args.app.db_path = "results/hybrid.db";
  std::optional<int64_t> run, compare;
  add_options(cli, args, run, compare);
  if (auto status = hybrid::base::parse_command_line(cli, argc, argv, 1)) return *status;
  AppOptions& opts = args.app;
  opts.run = run;
  opts.compare_run = compare;

  HostOptions host_opts;
  if (!parse_size(args.size, host_opts.width, host_opts.height)) {
    std::cerr << "hybrid-view: --size must be WxH between 320x240 and 8192x8192, got '" << args.size
              << "'\n";
    return 1;
  }
  const std::optional<std::vector<WindowId>> windows = windows_asked(args.window);
  if (!windows) return 1;
  if (!args.screenshot.empty()) {  // test mode
    host_opts.vsync = false;
    host_opts.save_settings = false;
    host_opts.ignore_mouse = true;
    opts.poll_interval_s = 1e9;  // a screenshot shows the database as opened
  }
  if (!GlHost::display_available()) {
    std::cerr << "hybrid-view: no X display (DISPLAY is not set); for screenshots run it under "
                 "xvfb-run -a -s \"-screen 0 1280x800x24\"\n";
    return 1;
  }
  return show(host_opts, opts, args, *windows);
}
