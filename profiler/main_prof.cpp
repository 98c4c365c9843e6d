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
#include <optional>

#include "base/cli_checks.h"
#include "profiler/chrome_trace.h"
#include "profiler/gpu_timeline.h"
#include "profiler/import/kineto_import.h"
#include "profiler/report_comm.h"
#include "profiler/report_flops.h"
#include "profiler/report_format.h"
#include "profiler/report_generate.h"
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

// Every stored generation row, or one run's (which must exist).
int print_generation_report(const std::string& db, std::optional<int64_t> run, bool json) {
  RunStore store(db, OpenMode::read_only);
  if (run) store.get_run(*run);
  const auto rows = store.generations(run);
  const auto runs = store.list_runs();
  if (json)
    std::cout << generation_report_json(runs, rows).dump(2) << "\n";
  else
    std::cout << generation_report(runs, rows);
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

// Every option of every subcommand, and which subcommand was given.
struct Args {
  std::string db = "results/hybrid.db";
  int64_t run = 0;
  std::string kind;
  FlopsReportOptions flops;
  int64_t step = -1;
  bool json = false;
  std::string out;
  int rank = -1;
  int64_t step_min = -1, step_max = -1;
  std::vector<std::string> import_files;
  import::KinetoImportOptions import_options;
  bool exact_times = false;
  double heartbeat = -1;
  CLI::App *runs = nullptr, *report = nullptr, *trace = nullptr, *import = nullptr,
           *migrate = nullptr, *stale = nullptr;
};

void add_report_command(CLI::App& app, Args& a) {
  a.report = app.add_subcommand("report", "print a report of one run");
  a.report->add_option("kind", a.kind, "flops | comm | steps | memory | gpu | generate")
      ->required()
      ->check(CLI::IsMember({"flops", "comm", "steps", "memory", "gpu", "generate"}));
  a.report->add_flag("--json", a.json, "gpu, generate: the figures as JSON");
  a.report->add_option("--db", a.db, "SQLite run store")->capture_default_str();
  a.report->add_option("--run", a.run,
                       "run id (see `hybrid-prof runs`); generate: every run's rows without it");
  a.report
      ->add_option("--depth", a.flops.module_depth, "flops: deepest module level shown, -1 = all")
      ->capture_default_str();
  a.report->add_option("--top", a.flops.top_modules, "flops: module types listed per depth")
      ->capture_default_str();
  a.report->add_option("--step", a.step, "flops: profiled step (default: the last)");
  a.report->add_flag("--summary-only{false}", a.flops.detailed,
                     "flops: summary and aggregated profile, no per-module trees (detailed=false)");
}

void add_trace_and_import_commands(CLI::App& app, Args& a) {
  a.trace = app.add_subcommand("export-trace", "write a run's events as Chrome trace JSON");
  a.trace->add_option("--db", a.db, "SQLite run store")->capture_default_str();
  a.trace->add_option("--run", a.run, "run id")->required();
  a.trace->add_option("-o,--out", a.out, "output file (Perfetto, chrome://tracing)")->required();
  a.trace->add_option("--rank", a.rank, "only this rank");
  a.trace->add_option("--step-min", a.step_min, "only steps from this one");
  a.trace->add_option("--step-max", a.step_max, "only steps up to this one");

  a.import = app.add_subcommand(
      "import-kineto",
      "import a PyTorch profiler job (one trace per rank) as a run; prints its id");
  a.import->add_option("--db", a.db, "SQLite run store")->capture_default_str();
  a.import->add_option("files", a.import_files, "trace files (.json or .json.gz), one per rank")
      ->required();
  a.import->add_option("--name", a.import_options.run_name, "run name (default: the first file's)");
  a.import->add_flag("--exact-times", a.exact_times,
                     "keep nanosecond times and the last profiler step (default: rules of "
                     "HolisticTraceAnalysis 0.5.0, see docs/profiler.md)");
}

void add_store_commands(CLI::App& app, Args& a) {
  a.runs = app.add_subcommand("runs", "list the runs in the database");
  a.runs->add_option("--db", a.db, "SQLite run store")->capture_default_str();
  a.migrate = app.add_subcommand("migrate", "upgrade the database to this build's schema");
  a.migrate->add_option("--db", a.db, "SQLite run store")->required();
  a.stale = app.add_subcommand("mark-stale", "mark runs whose writer process died as failed");
  a.stale->add_option("--db", a.db, "SQLite run store")->capture_default_str();
  a.stale->add_option("--heartbeat-timeout", a.heartbeat,
                      "also runs of other hosts silent for this many seconds");
}

int migrate(const std::string& db) {
  RunStore store(db, OpenMode::read_write);
  std::cout << fmt::format("{}: schema version {} → {}\n", db, store.opened_schema_version(),
                           RunStore::schema_version());
  return 0;
}

int mark_stale(const std::string& db, double heartbeat) {
  RunStore store(db, OpenMode::read_write);
  const auto marked =
      store.mark_stale_runs(heartbeat >= 0 ? std::optional(heartbeat) : std::nullopt);
  std::cout << fmt::format("marked {} run(s) failed\n", marked.size());
  for (int64_t id : marked) std::cout << "  run " << id << "\n";
  return 0;
}

int run(Args& a) {
  if (*a.runs) return list_runs(a.db);
  if (*a.report) {
    const bool run_given = a.report->get_option("--run")->count() > 0;
    if (a.kind == "generate")
      return print_generation_report(a.db, run_given ? std::optional(a.run) : std::nullopt, a.json);
    if (!run_given) {
      std::cerr << "hybrid-prof: report " << a.kind << " needs --run ID (see hybrid-prof runs)\n";
      return 1;
    }
    if (a.step >= 0) a.flops.step = a.step;
    return print_report(a.db, a.kind, a.run, a.flops, a.json);
  }
  if (*a.trace) {
    EventFilter filter;
    if (a.rank >= 0) filter.rank = a.rank;
    if (a.step_min >= 0) filter.step_min = a.step_min;
    if (a.step_max >= 0) filter.step_max = a.step_max;
    return export_trace(a.db, a.run, a.out, filter);
  }
  if (*a.import) {
    a.import_options.hta_compatible = !a.exact_times;
    return import_kineto(a.db, a.import_files, a.import_options);
  }
  if (*a.migrate) return migrate(a.db);
  if (*a.stale) return mark_stale(a.db, a.heartbeat);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-prof: reports, run list and Chrome trace export from the run store"};
  app.require_subcommand(1);
  Args args;
  add_store_commands(app, args);
  add_report_command(app, args);
  add_trace_and_import_commands(app, args);
  if (auto status = hybrid::base::parse_command_line(app, argc, argv, 1)) return *status;
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "hybrid-prof: " << e.what() << "\n";
    return 1;
  }
}
