// The CPU GEMM provider of every GEMM the model runs: forced by hybrid.gemm (or
// the environment's HYBRID_GEMM, which wins), or "auto": rank 0 measures each
// provider on the model's own shapes once per machine (kernels/cpu/gemm_selection.h,
// cached), and every rank follows rank 0's choice, so all ranks run the same kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/model/module.h"
#include "kernels/cpu/gemm_provider.h"

namespace hybrid::engine {

// The GEMMs of every Linear module at this micro-batch: forward (NT), the input
// gradient (NN) and the weight gradient (TN); distinct shapes only.
std::vector<kernels::cpu::GemmShape> model_gemm_shapes(const ModuleTree& tree, kernels::DType dt,
                                                       int B, int T);

struct CpuGemmSetup {
  // {"mode": "auto"|"onednn"|"openblas", "source": "hybrid.gemm"|"HYBRID_GEMM",
  //  "openblas_core": ..., "shapes": {"f32 NT 1024x2304x768": {"provider", "gflops", "cached"}}}
  nlohmann::json report;
  std::vector<std::string> notes;  // lines for the log (rank 0)
};

// Routes cpu::gemm. `broadcast` sends rank 0's value to every rank (identity on
// one rank). Throws ConfigError for an unknown HYBRID_GEMM or a forced provider
// that cannot load.
CpuGemmSetup setup_cpu_gemm(const Config& cfg, const ModuleTree& tree, int rank,
                            const std::function<int64_t(int64_t)>& broadcast);

}  // namespace hybrid::engine
