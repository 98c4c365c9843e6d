// One PyTorch profiler (Kineto) trace file, read as a stream: `.json` or
// `.json.gz` (detected from the bytes, not the name), parsed with nlohmann/json's
// SAX interface so that memory grows with the events kept, never with the file.
// Only what the importer translates is kept: GPU records, the CPU events that
// launched them, the scopes around those launches, autograd ops and profiler steps.
//
// Times are exact integer nanoseconds parsed from the JSON text (Kineto writes
// microseconds, with a fraction in nanosecond-resolution traces): no rounding here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/event.h"

namespace hybrid::profiler::import {

// Every problem with an input file; the message names the file and what is wrong.
struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KinetoGpuRecord {
  Category category = Category::kernel;  // kernel, or memcpy for gpu_memcpy/gpu_memset
  uint32_t name = 0;                     // index into KinetoTrace::names
  int64_t device = 0;
  int64_t stream = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::optional<int64_t> correlation;
  uint64_t bytes = 0;
  // ts and dur as float64 µs, as Python reads them: HolisticTraceAnalysis computes
  // with these, and at unix-epoch magnitudes float64 steps by 0.25 µs.
  double ts_us = 0;
  double dur_us = 0;
};

// A CPU-side span: a runtime launch, a scope, an autograd op or a profiler step.
struct KinetoCpuSpan {
  uint32_t thread = 0;  // index into KinetoTrace::threads
  uint32_t name = 0;    // index into KinetoTrace::names
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::optional<int64_t> correlation;  // launches only
};

struct KinetoTrace {
  std::string path;
  std::optional<int> rank;  // distributedInfo.rank
  std::optional<int> world_size;
  std::string backend;               // distributedInfo.backend ("nccl")
  std::vector<std::string> devices;  // deviceProperties[].name, by position
  std::string host;                  // host_name, when the trace has one
  std::string generator;             // otherData.generator ("hybrid-prof": our own export)
  int64_t base_time_ns = 0;          // baseTimeNanoseconds (0 when absent)
  int64_t pid = 0;                   // the process of the first launch

  std::vector<std::string> names;    // interned event names
  std::vector<std::string> threads;  // "pid/tid" of CPU spans
  std::vector<KinetoGpuRecord> gpu;
  std::vector<KinetoCpuSpan> launches;  // non-GPU events carrying args.correlation
  std::vector<KinetoCpuSpan> scopes;    // user_annotation and python_function
  std::vector<KinetoCpuSpan> autograd;  // cpu_op "autograd::engine::evaluate_function: ..."
  std::vector<KinetoCpuSpan> steps;     // "ProfilerStep#N" (any category)
  uint64_t events_read = 0;             // every traceEvents entry
};

// Throws ImportError naming the file: missing, a directory, empty, truncated gzip,
// malformed or truncated JSON, no traceEvents array, an event without a field it
// needs, nothing the analysis can use (no GPU record and no CPU span), or a trace
// that hybrid-prof's export-trace wrote.
KinetoTrace read_kineto_trace(const std::filesystem::path& path);

// "1712195495505543.2" (µs) → 1712195495505543200 ns, exactly; nullopt for text
// that is not a plain decimal number.
std::optional<int64_t> parse_us_as_ns(std::string_view text);

}  // namespace hybrid::profiler::import
