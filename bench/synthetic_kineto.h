// A deterministic synthetic PyTorch profiler (Kineto) trace for the import
// benchmark (bench_import): one rank of a data-parallel GPT-2-like model, step
// after step until the file reaches a size, written the way Kineto writes it.
// What it holds: bench/synthetic_kineto.cpp.
#pragma once

#include <cstdint>
#include <filesystem>

namespace hybrid::bench {

struct SyntheticTraceInfo {
  uint64_t json_bytes = 0;
  uint64_t gz_bytes = 0;     // 0 when no .json.gz was written
  uint64_t events = 0;       // traceEvents entries
  uint64_t gpu_records = 0;  // kernels, memcpys, memsets
  uint64_t launches = 0;     // cuda_runtime events with a correlation id
  int steps = 0;             // ProfilerStep#N annotations
};

// Writes `json` (and the same bytes gzip-compressed to `gz` unless it is empty),
// whole steps until at least `min_bytes` of JSON. Throws std::runtime_error when
// a file cannot be written.
SyntheticTraceInfo write_synthetic_kineto(const std::filesystem::path& json,
                                          const std::filesystem::path& gz, uint64_t min_bytes);

}  // namespace hybrid::bench
