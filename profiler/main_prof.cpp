// hybrid-prof: reads the run store and prints reports, lists runs, exports Chrome
// traces. Reading commands open the database read-only, so they are safe while
// runs and sweeps are being written.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "profiler/chrome_trace.h"
#include "profiler/gpu_timeline.h"
#include "profiler/import/kineto_import.h"
#include "profiler/report_comm.h"
#include "profiler/report_flops.h"
#include "profiler/report_format.h"
#include "profiler/report_gpu.h"
#include "profiler/report_memory.h"
#include "profiler/report_steps.h"
#include "profiler/store/run_store.h"

namespace {

using namespace hybrid::profiler;

std::string local_time(double unix_s) {
  if (unix_s <= 0) return "-";
  const std::time_t t = std::time_t(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

int list_runs(const std::string& db) {
  RunStore store(db, OpenMode::read_only);
  const auto runs = store.list_runs();
  if (runs.empty()) {
    std::cout << "no runs in " << db << "\n";
    return 0;
  }
  report::TextTable table({"id", "name", "status", "started", "duration", "ranks", "dtype", "zero",
                           "micro batch", "params", "host"},
                          2);
  for (const auto& r : runs) {
    const std::string duration =
        r.finished_at ? report::format_ms((*r.finished_at - r.started_at) * 1e3) : "-";
    table.add_row({std::to_string(r.id), r.name, std::string(to_string(r.status)),
                   local_time(r.started_at), duration, std::to_string(r.world_size), r.dtype,
                   std::to_string(r.zero_stage), std::to_string(r.micro_batch),
                   report::format_count(double(r.n_params)), r.host});
  }
  std::cout << table.render();
  return 0;
}

int print_report(const std::string& db, const std::string& kind, int64_t run,
                 const FlopsReportOptions& flops_options, bool json) {
  RunStore store(db, OpenMode::read_only);
  const RunProfile profile = store.load_profile(run);
  if (kind == "gpu" && json)
    std::cout << gpu_report_json(profile).dump(2) << "\n";
  else if (kind == "gpu")
    std::cout << gpu_report(profile, store.events(run));
  else if (kind == "flops")
    std::cout << flops_report(profile, flops_options);
  else if (kind == "comm")
    std::cout << comm_report(profile);
  else if (kind == "steps")
    std::cout << steps_report(profile);
  else
    std::cout << memory_report(profile);
  return 0;
}

int export_trace(const std::string& db, int64_t run, const std::string& out,
                 const EventFilter& filter) {
  RunStore store(db, OpenMode::read_only);
  const RunInfo info = store.get_run(run);
  const EventSet events = store.events(run, filter);
  const auto trace = chrome_trace(events, store.modules(run), store.ranks(run), &info);
  write_chrome_trace(out, trace);
  std::cout << fmt::format("wrote {} events of run {} to {}\n", events.events.size(), run, out);
  return 0;
}

// The files of one job become one run: read and translate everything first, then
// write it in one transaction, so that a bad file leaves the store unchanged.
int import_kineto(const std::string& db, const std::vector<std::string>& files,
                  const import::KinetoImportOptions& options) {
  const std::vector<std::filesystem::path> paths(files.begin(), files.end());
  RunRecord record = import::import_kineto(paths, options);
  analyze_gpu_run(record);
  RunStore store(db, OpenMode::read_write);
  const int64_t id = store.write_run(record);
  std::cerr << fmt::format("imported {} GPU records and {} modules of {} rank(s) into {}\n",
                           std::count_if(record.events.events.begin(), record.events.events.end(),
                                         [](const Event& e) { return is_gpu_record(e); }),
                           record.modules.size(), record.ranks.size(), db);
  std::cout << id << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-prof: reports, run list and Chrome trace export from the run store"};
  app.require_subcommand(1);
  std::string db = "results/hybrid.db";
  int64_t run = 0;

  auto* runs_cmd = app.add_subcommand("runs", "list the runs in the database");
  runs_cmd->add_option("--db", db, "SQLite run store")->capture_default_str();

  std::string kind;
  FlopsReportOptions flops_options;
  int64_t step = -1;
  auto* report_cmd = app.add_subcommand("report", "print a report of one run");
  bool json = false;
  report_cmd->add_option("kind", kind, "flops | comm | steps | memory | gpu")
      ->required()
      ->check(CLI::IsMember({"flops", "comm", "steps", "memory", "gpu"}));
  report_cmd->add_flag("--json", json, "gpu: the per-rank breakdown as JSON");
  report_cmd->add_option("--db", db, "SQLite run store")->capture_default_str();
  report_cmd->add_option("--run", run, "run id (see `hybrid-prof runs`)")->required();
  report_cmd
      ->add_option("--depth", flops_options.module_depth,
                   "flops: deepest module level shown, -1 = all")
      ->capture_default_str();
  report_cmd->add_option("--top", flops_options.top_modules, "flops: module types listed per depth")
      ->capture_default_str();
  report_cmd->add_option("--step", step, "flops: profiled step (default: the last)");

  std::string out;
  int rank = -1;
  int64_t step_min = -1, step_max = -1;
  auto* trace_cmd = app.add_subcommand("export-trace", "write a run's events as Chrome trace JSON");
  trace_cmd->add_option("--db", db, "SQLite run store")->capture_default_str();
  trace_cmd->add_option("--run", run, "run id")->required();
  trace_cmd->add_option("-o,--out", out, "output file (Perfetto, chrome://tracing)")->required();
  trace_cmd->add_option("--rank", rank, "only this rank");
  trace_cmd->add_option("--step-min", step_min, "only steps from this one");
  trace_cmd->add_option("--step-max", step_max, "only steps up to this one");

  std::vector<std::string> import_files;
  import::KinetoImportOptions import_options;
  bool exact_times = false;
  auto* import_cmd = app.add_subcommand(
      "import-kineto", "import a PyTorch profiler job (one trace per rank) as a run; prints its id");
  import_cmd->add_option("--db", db, "SQLite run store")->capture_default_str();
  import_cmd->add_option("files", import_files, "trace files (.json or .json.gz), one per rank")
      ->required();
  import_cmd->add_option("--name", import_options.run_name, "run name (default: the first file's)");
  import_cmd->add_flag("--exact-times", exact_times,
                       "keep nanosecond times and the last profiler step (default: rules of "
                       "HolisticTraceAnalysis 0.5.0, see docs/profiler.md)");

  auto* migrate_cmd = app.add_subcommand("migrate", "upgrade the database to this build's schema");
  migrate_cmd->add_option("--db", db, "SQLite run store")->required();

  double heartbeat = -1;
  auto* stale_cmd =
      app.add_subcommand("mark-stale", "mark runs whose writer process died as failed");
  stale_cmd->add_option("--db", db, "SQLite run store")->capture_default_str();
  stale_cmd->add_option("--heartbeat-timeout", heartbeat,
                        "also runs of other hosts silent for this many seconds");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*runs_cmd) return list_runs(db);
    if (*report_cmd) {
      if (step >= 0) flops_options.step = step;
      return print_report(db, kind, run, flops_options, json);
    }
    if (*trace_cmd) {
      EventFilter filter;
      if (rank >= 0) filter.rank = rank;
      if (step_min >= 0) filter.step_min = step_min;
      if (step_max >= 0) filter.step_max = step_max;
      return export_trace(db, run, out, filter);
    }
    if (*import_cmd) {
      import_options.hta_compatible = !exact_times;
      return import_kineto(db, import_files, import_options);
    }
    if (*migrate_cmd) {
      RunStore store(db, OpenMode::read_write);
      std::cout << fmt::format("{}: schema version {} → {}\n", db, store.opened_schema_version(),
                               RunStore::schema_version());
      return 0;
    }
    if (*stale_cmd) {
      RunStore store(db, OpenMode::read_write);
      const auto marked =
          store.mark_stale_runs(heartbeat >= 0 ? std::optional(heartbeat) : std::nullopt);
      std::cout << fmt::format("marked {} run(s) failed\n", marked.size());
      for (int64_t id : marked) std::cout << "  run " << id << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "hybrid-prof: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
