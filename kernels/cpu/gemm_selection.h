// Choosing the GEMM provider per machine and shape by measuring, once: the
// choice is cached in a small JSON file keyed by the machine (CPU model, the
// flags that select kernels, threads, OpenBLAS's core type) and the shape
// ("bf16 NT 1024x2304x768"), so later processes on the machine reuse it.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm_provider.h"

namespace hybrid::kernels::cpu {

struct GemmChoice {
  GemmShape shape;
  GemmProvider provider = GemmProvider::onednn;
  std::vector<std::pair<GemmProvider, double>> gflops;  // measured rate of each candidate
  bool from_cache = false;
};

struct GemmSelection {
  std::string machine;     // the cache key of this machine
  std::string cache_path;  // "" when the cache is not used
  std::vector<GemmChoice> choices;
  std::vector<std::string> warnings;  // an unreadable cache, a provider that cannot load
  int measured = 0;                   // shapes measured now (not from the cache)
};

// "$HYBRID_CACHE_DIR/gemm-providers.json", else under $XDG_CACHE_HOME/hybrid, else
// ~/.cache/hybrid.
std::filesystem::path default_gemm_cache_path();

// This machine's cache key, e.g. "Intel(R) Xeon(R) Processor | avx2 avx512_bf16 ... |
// 2 threads | openblas SkylakeX".
std::string gemm_machine_key();

// GFLOP/s of one provider on one shape: fresh operands, one warm-up call, then
// timed calls until both `min_calls` and `min_seconds` are reached; the median.
double measure_gemm(GemmProvider p, const GemmShape& shape, int min_calls = 5,
                    double min_seconds = 0.05);

// Every shape gets its fastest available provider (measured unless the cache has
// it), is routed there (route_gemm), and the cache is written back atomically
// with the other machines' entries kept. An unreadable cache is ignored with a
// warning and rewritten. cache_path "" measures without a cache.
GemmSelection select_gemm_providers(const std::vector<GemmShape>& shapes,
                                    const std::filesystem::path& cache_path);

}  // namespace hybrid::kernels::cpu
