// Import speed and memory of the PyTorch profiler (Kineto) importer on a synthetic
// trace of >= 100 MB (bench/synthetic_kineto.h), each figure with its reference
// measured side by side in the same run:
// - speed: the full import (read + translate + analyze + write to a fresh SQLite
//   file, as `hybrid-prof import-kineto` does) against the floor of any streaming
//   importer, reading the same bytes and parsing them with nlohmann's SAX parser
//   and a handler that does nothing (and, below that, reading the bytes alone);
// - memory: the import's peak RSS growth against the file size, and against what
//   parsing the file into a DOM (nlohmann::json::parse) costs.
// Every measurement runs in a fresh forked child: peak RSS (ru_maxrss from wait4)
// is then that variant's alone, and no variant inherits another's heap. Times are
// the child's wall time of the work; the file is in the page cache (just written).
//
//   build/bench/bench_import                 # 3 repetitions, medians and ratios at the end
//   build/bench/bench_import --trace_mb=300  # a bigger trace (decimal MB of JSON)
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/statistics.h"
#include "base/text.h"
#include "bench/forked_sample.h"
#include "bench/parse_floor.h"
#include "bench/suite_main.h"
#include "bench/synthetic_kineto.h"
#include "profiler/gpu_timeline.h"
#include "profiler/import/kineto_import.h"
#include "profiler/store/run_store.h"

namespace {

namespace fs = std::filesystem;
using hybrid::bench::ChildReport;
using hybrid::bench::proc_status_mib;
using hybrid::bench::run_in_child;
using hybrid::bench::Sample;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kMiB = 1024.0 * 1024.0;
uint64_t g_trace_bytes = 110'000'000;  // --trace_mb

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The synthetic trace, written once per process into a temporary directory.
struct Env {
  fs::path dir, json_path, gz_path;
  hybrid::bench::SyntheticTraceInfo info;
  double write_s = 0;

  static Env& get() {
    static Env env;
    return env;
  }

 private:
  Env() {
    dir = fs::temp_directory_path() / fmt::format("bench_import_{}", ::getpid());
    fs::create_directories(dir);
    json_path = dir / "synthetic_rank-0.json";
    gz_path = dir / "synthetic_rank-0.json.gz";
    const auto t0 = Clock::now();
    info = hybrid::bench::write_synthetic_kineto(json_path, gz_path, g_trace_bytes);
    write_s = seconds_since(t0);
  }
  ~Env() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// --- the variants ---------------------------------------------------------

// What `hybrid-prof import-kineto` does (profiler/main_prof.cpp), phase by phase.
void full_import(const fs::path& path, const fs::path& db, ChildReport& r) {
  using namespace hybrid::profiler;
  auto t = Clock::now();
  auto phase_done = [&](int i) {
    r.phase_s[i] = seconds_since(t);
    r.hwm_mib[i] = proc_status_mib("VmHWM");
    t = Clock::now();
  };
  RunRecord record;
  {
    std::vector<import::KinetoTrace> traces;  // as import_kineto holds them
    traces.push_back(import::read_kineto_trace(path));
    phase_done(0);
    record = import::translate_kineto(traces);
  }
  phase_done(1);
  analyze_gpu_run(record);
  phase_done(2);
  {
    RunStore store(db);
    store.write_run(record);
  }
  phase_done(3);
  r.records = record.events.events.size();
}

enum class Work { read_bytes, sax_noop, dom_parse, full_import };

std::map<std::string, std::vector<Sample>> g_samples;  // by benchmark name

void add_counters(benchmark::State& state, const Sample& s, bool gz) {
  const Env& env = Env::get();
  const double file_mib = double(gz ? env.info.gz_bytes : env.info.json_bytes) / kMiB;
  state.counters["events_per_s"] = double(env.info.events) / s.r.wall_s;
  state.counters["json_MB_per_s"] = double(env.info.json_bytes) / 1e6 / s.r.wall_s;
  state.counters["cpu_s"] = s.cpu_s;
  state.counters["peak_rss_MiB"] = s.peak_rss_mib;
  state.counters["rss_growth_MiB"] = s.growth_mib();
  state.counters["growth_per_file_MiB"] = s.growth_mib() / file_mib;
  if (s.r.records) state.counters["records"] = double(s.r.records);
  if (s.r.db_mib > 0) {
    const char* const names[] = {"read_s", "translate_s", "analyze_s", "write_s"};
    for (int i = 0; i < 4; ++i) state.counters[names[i]] = s.r.phase_s[i];
    state.counters["db_MiB"] = s.r.db_mib;
  }
}

void bm_import(benchmark::State& state, const std::string& name, Work work, bool gz) {
  const Env& env = Env::get();
  const fs::path& path = gz ? env.gz_path : env.json_path;
  const fs::path db = env.dir / "import.db";  // fresh for each run
  Sample s;
  for (auto _ : state) {
    s = run_in_child([&](ChildReport& r) {
      switch (work) {
        case Work::read_bytes:
          return hybrid::bench::read_bytes(path);
        case Work::sax_noop:
          return hybrid::bench::sax_noop(path);
        case Work::dom_parse:
          r.records = hybrid::bench::dom_parse(path);
          return;
        case Work::full_import:
          return full_import(path, db, r);
      }
    });
    if (work == Work::full_import && fs::exists(db)) {
      s.r.db_mib = double(fs::file_size(db)) / kMiB;
      for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db.string() + ext);
    }
    if (s.r.error[0]) {
      state.SkipWithError(s.r.error);
      return;
    }
    state.SetIterationTime(s.r.wall_s);
  }
  add_counters(state, s, gz);
  g_samples[name].push_back(s);
}

// --- the summary ----------------------------------------------------------

double median_of(const std::vector<Sample>& v, const std::function<double(const Sample&)>& f) {
  std::vector<double> x;
  for (const Sample& s : v) x.push_back(f(s));
  return hybrid::base::median(x);
}

struct Medians {
  size_t n = 0;
  double wall_s = 0, cpu_s = 0, peak_mib = 0, growth_mib = 0;
  double phase_s[4] = {};
  double hwm_growth_mib[4] = {};  // peak RSS growth by the end of each phase
  uint64_t records = 0;
};

Medians medians(const std::string& name) {
  Medians m;
  const auto it = g_samples.find(name);
  if (it == g_samples.end()) return m;
  const auto& v = it->second;
  m.n = v.size();
  m.wall_s = median_of(v, [](const Sample& s) { return s.r.wall_s; });
  m.cpu_s = median_of(v, [](const Sample& s) { return s.cpu_s; });
  m.peak_mib = median_of(v, [](const Sample& s) { return s.peak_rss_mib; });
  m.growth_mib = median_of(v, [](const Sample& s) { return s.growth_mib(); });
  for (int i = 0; i < 4; ++i) {
    m.phase_s[i] = median_of(v, [i](const Sample& s) { return s.r.phase_s[i]; });
    m.hwm_growth_mib[i] =
        median_of(v, [i](const Sample& s) { return s.r.hwm_mib[i] - s.r.rss_start_mib; });
  }
  m.records = v.front().r.records;
  return m;
}

void print_format_summary(bool gz) {
  const Env& env = Env::get();
  const char* ext = gz ? "json.gz" : "json";
  const Medians full = medians(fmt::format("import/full/{}", ext));
  const Medians floor = medians(fmt::format("import/sax_noop/{}", ext));
  const Medians bytes = medians(fmt::format("import/read_bytes/{}", ext));
  const Medians dom = medians(fmt::format("import/dom_parse/{}", ext));
  if (full.n == 0) return;
  const double file_mib = double(gz ? env.info.gz_bytes : env.info.json_bytes) / kMiB;
  const double json_mib = double(env.info.json_bytes) / kMiB;
  fmt::print("\n.{} ({:.1f} MiB on disk), medians of {} runs:\n", ext, file_mib, full.n);
  fmt::print(
      "  full import: {:.2f} s wall, {:.2f} s CPU = {:.0f}k events/s, {:.1f} MB/s of JSON "
      "(read {:.2f} s, translate {:.2f} s, analyze {:.2f} s, write {:.2f} s; {} records); "
      "{:.3f} x the 60 s limit\n",
      full.wall_s, full.cpu_s, double(env.info.events) / full.wall_s / 1e3,
      double(env.info.json_bytes) / 1e6 / full.wall_s, full.phase_s[0], full.phase_s[1],
      full.phase_s[2], full.phase_s[3], full.records, full.wall_s / 60.0);
  if (floor.n)
    fmt::print(
        "  the floor, read + SAX parse with a no-op handler: {:.2f} s wall, {:.2f} s CPU: "
        "the import takes {:.2f} x the floor's wall time ({:.2f} x its CPU time); "
        "its read phase alone {:.2f} x\n",
        floor.wall_s, floor.cpu_s, full.wall_s / floor.wall_s, full.cpu_s / floor.cpu_s,
        full.phase_s[0] / floor.wall_s);
  if (bytes.n)
    fmt::print("  reading the bytes alone{}: {:.2f} s ({:.0f} MB/s of JSON)\n",
               gz ? " (gunzip)" : "", bytes.wall_s,
               double(env.info.json_bytes) / 1e6 / bytes.wall_s);
  fmt::print(
      "  peak RSS: {:.0f} MiB, +{:.0f} MiB over the child's start = {:.2f} x the JSON's "
      "{:.1f} MiB ({:.0f} bytes per record kept){}\n",
      full.peak_mib, full.growth_mib, full.growth_mib / json_mib, json_mib,
      full.growth_mib * kMiB / double(std::max<uint64_t>(full.records, 1)),
      gz ? fmt::format(", {:.1f} x the .gz file", full.growth_mib / file_mib) : "");
  fmt::print(
      "    peak growth by the end of read {:.0f} MiB, translate {:.0f}, analyze {:.0f}, "
      "write {:.0f}\n",
      full.hwm_growth_mib[0], full.hwm_growth_mib[1], full.hwm_growth_mib[2],
      full.hwm_growth_mib[3]);
  if (dom.n)
    fmt::print(
        "  DOM parse (nlohmann::json::parse, nothing translated): {:.2f} s, +{:.0f} MiB = "
        "{:.2f} x the JSON: the import needs {:.3f} x the DOM's memory ({:.1f} x less)\n",
        dom.wall_s, dom.growth_mib, dom.growth_mib / json_mib, full.growth_mib / dom.growth_mib,
        dom.growth_mib / full.growth_mib);
}

void print_summary() {
  if (g_samples.empty()) return;
  const Env& env = Env::get();
  const auto& i = env.info;
  fmt::print(
      "\nsynthetic Kineto trace: {:.1f} MB JSON ({:.1f} MiB), {:.1f} MB gzipped; {} traceEvents "
      "({:.0f} bytes each), {} GPU records, {} launches, {} steps; written in {:.1f} s\n",
      double(i.json_bytes) / 1e6, double(i.json_bytes) / kMiB, double(i.gz_bytes) / 1e6, i.events,
      double(i.json_bytes) / double(i.events), i.gpu_records, i.launches, i.steps, env.write_s);
  fmt::print(
      "each run in a fresh forked child (peak RSS = its ru_maxrss); the file in the page cache\n");
  print_format_summary(false);
  print_format_summary(true);
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char buf[128] = {};
    if (std::fgets(buf, sizeof buf, f)) fmt::print("load average now: {}", buf);
    std::fclose(f);
  }
}

// Our flags, taken out of argv before Google Benchmark sees it: --trace_mb=N
// (decimal MB of JSON); and which of its flags the caller set.
struct Flags {
  bool repetitions = false, interleaving = false, bad = false;
};

Flags take_own_flags(int& argc, char** argv) {
  Flags f;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("--trace_mb=")) {
      const double mb = hybrid::base::parse_double(std::string_view(a).substr(11)).value_or(0.0);
      f.bad = f.bad || !(mb > 0);
      g_trace_bytes = uint64_t(mb * 1e6);
      continue;
    }
    f.repetitions = f.repetitions || a.starts_with("--benchmark_repetitions");
    f.interleaving = f.interleaving || a.starts_with("--benchmark_enable_random_interleaving");
    argv[out++] = argv[i];
  }
  argc = out;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = take_own_flags(argc, argv);
  if (flags.bad) {
    std::fprintf(stderr, "bench_import: --trace_mb wants a positive number of MB\n");
    return 2;
  }
  // Repetitions of all variants interleaved at random by default: machine noise
  // then falls on the import and its references alike.
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  if (!flags.interleaving) args.push_back(interleave.data());
  const std::pair<const char*, Work> works[] = {{"read_bytes", Work::read_bytes},
                                                {"sax_noop", Work::sax_noop},
                                                {"full", Work::full_import},
                                                {"dom_parse", Work::dom_parse}};
  for (const bool gz : {false, true})
    for (const auto& [name, work] : works) {
      if (gz && work == Work::dom_parse) continue;  // the memory reference needs one format only
      const std::string full_name = fmt::format("import/{}/{}", name, gz ? "json.gz" : "json");
      auto* b = benchmark::RegisterBenchmark(full_name.c_str(), bm_import, full_name, work, gz);
      b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
      if (!flags.repetitions) b->Repetitions(3);  // each run is seconds: medians of 3
    }
  const int n = int(args.size());
  args.push_back(nullptr);
  return hybrid::bench::run_suite(n, args.data(), print_summary);
}
