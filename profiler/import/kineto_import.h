// The PyTorch profiler (Kineto) importer: the files of one job (one per rank)
// become one run of the store, with the same event model as our own runs.
// It translates and never analyses: the GPU-timeline analysis
// (profiler/gpu_timeline.h) runs on what it produces, as on our CUPTI records.
//
// Translation rules (docs/profiler.md, "Importing PyTorch traces"):
// - rank and world size from distributedInfo; device name from deviceProperties;
// - every GPU record (kernel, gpu_memcpy, gpu_memset) becomes an Event on the lane
//   kLaneGpuBase + its stream;
// - a record's launch is the CPU event with the same args.correlation; the
//   innermost user_annotation/python_function scope enclosing that launch on the
//   launching thread is its module (modules are scope paths, merged across steps
//   and ranks); the launch's phase is backward inside an autograd op or a scope
//   named "...backward...", optimizer inside "...optimizer...", forward inside
//   "...forward..." (the innermost such scope decides), other elsewhere;
// - its step is the ProfilerStep#N that encloses the launch.
// With `hta_compatible` (the default) two more rules make the figures agree with
// HolisticTraceAnalysis 0.5.0: start times are rounded up and end times down to
// whole microseconds, and when a trace has two or more ProfilerStep annotations
// only records launched before the last one starts are kept (it is usually cut off).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "profiler/import/kineto_trace.h"
#include "profiler/profile_data.h"

namespace hybrid::profiler::import {

struct KinetoImportOptions {
  std::string run_name;        // default: the first file's name without extensions
  bool hta_compatible = true;  // µs rounding and the last profiler step dropped
};

class ModuleTable;

// Builds one run from the traces of a job, one rank at a time (each trace may be
// dropped once added). Throws ImportError naming the file at fault: two files
// claiming one rank, disagreeing world sizes, a rank outside the world.
class KinetoRunBuilder {
 public:
  KinetoRunBuilder(size_t files, KinetoImportOptions options);
  ~KinetoRunBuilder();
  void add(const KinetoTrace& trace);
  RunRecord finish();  // no analysis yet (gpu, layers and step_ranks empty)

 private:
  void describe_run(const KinetoTrace& first);
  void take_steps(const KinetoTrace& lowest_rank);

  size_t files_;
  KinetoImportOptions options_;
  std::unique_ptr<ModuleTable> modules_;
  RunRecord record_;
  std::map<int, std::string> rank_files_;
  std::optional<int> world_;
  std::string world_from_;
  std::string backend_;
};

// Throws ImportError naming the file at fault, also when two files claim one rank.
// The result has no analysis yet (gpu and layers are empty).
RunRecord import_kineto(std::span<const std::filesystem::path> files,
                        const KinetoImportOptions& options = {});

// The same over traces already read (what import_kineto does after reading).
RunRecord translate_kineto(std::span<const KinetoTrace> traces,
                           const KinetoImportOptions& options = {});

}  // namespace hybrid::profiler::import
