#include "engine/cpu_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "engine/model/layers.h"
#include "kernels/cpu/gemm_selection.h"
#include "kernels/cpu/openblas.h"

namespace hybrid::engine {

namespace {

using kernels::cpu::GemmProvider;
using kernels::cpu::GemmShape;

// The forced provider, or nullopt for "auto"; the report says where it came from.
std::optional<GemmProvider> requested(const Config& cfg, nlohmann::json& report) {
  const char* env = std::getenv("HYBRID_GEMM");
  const std::string mode = env && *env ? env : cfg.gemm;
  report["mode"] = mode;
  report["source"] = env && *env ? "HYBRID_GEMM" : "hybrid.gemm";
  if (mode == "auto") return std::nullopt;
  const auto p = kernels::cpu::parse_provider(mode);
  if (!p)
    throw ConfigError(
        fmt::format("config: HYBRID_GEMM must be one of \"auto\", \"onednn\", "
                    "\"openblas\", \"avx512bf16\", got \"{}\"",
                    mode));
  std::string why;
  if (!kernels::cpu::provider_available(*p, &why))
    throw ConfigError(fmt::format("config: {} = \"{}\" cannot be used: {}",
                                  report["source"].get<std::string>(), mode, why));
  if (!kernels::cpu::provider_supports(*p, cfg.param_dtype()))
    throw ConfigError(fmt::format("config: {} = \"{}\" computes bf16 only; this run is {}",
                                  report["source"].get<std::string>(), mode,
                                  kernels::dtype_name(cfg.param_dtype())));
  return p;
}

}  // namespace

std::vector<GemmShape> model_gemm_shapes(const ModuleTree& tree, kernels::DType dt, int B, int T) {
  std::vector<GemmShape> shapes;
  const auto add = [&](GemmShape s) {
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  };
  const int M = B * T;
  for (const Module* m : tree.modules())
    if (const auto* lin = dynamic_cast<const Linear*>(m)) {
      const int K = lin->in_features(), N = lin->out_features();
      add({dt, false, true, M, N, K});   // out = in · Wᵀ
      add({dt, false, false, M, K, N});  // din += dout · W
      add({dt, true, false, N, K, M});   // dW += doutᵀ · in
    }
  return shapes;
}

CpuGemmSetup setup_cpu_gemm(const Config& cfg, const ModuleTree& tree, int rank,
                            const std::function<int64_t(int64_t)>& broadcast) {
  CpuGemmSetup out;
  nlohmann::json& report = out.report;
  const auto forced = requested(cfg, report);
  const auto& blas = kernels::cpu::openblas::library();
  report["openblas_core"] = blas.loaded ? blas.core + " (" + blas.core_from + ")" : blas.error;
  kernels::cpu::clear_gemm_routes();
  if (forced) {
    kernels::cpu::force_gemm_provider(forced);
    out.notes.push_back(fmt::format("gemm: every GEMM on {} ({})",
                                    kernels::cpu::provider_name(*forced),
                                    report["source"].get<std::string>()));
    return out;
  }
  const auto shapes =
      model_gemm_shapes(tree, cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu, cfg.seq_len());
  if (shapes.size() > 31) throw std::logic_error("setup_cpu_gemm: more than 31 GEMM shapes");
  // Rank 0 measures (or reads the cache); its choices travel as two bits per shape.
  int64_t choices = 0;
  int off_onednn = 0;
  nlohmann::json per_shape = nlohmann::json::object();
  if (rank == 0) {
    const auto sel =
        kernels::cpu::select_gemm_providers(shapes, kernels::cpu::default_gemm_cache_path());
    for (size_t i = 0; i < sel.choices.size(); ++i) {
      const auto& c = sel.choices[i];
      choices |= int64_t(c.provider) << (2 * i);
      off_onednn += c.provider != GemmProvider::onednn;
      nlohmann::json rates = nlohmann::json::object();
      for (const auto& [p, r] : c.gflops) rates[std::string(kernels::cpu::provider_name(p))] = r;
      per_shape[c.shape.str()] = {{"provider", kernels::cpu::provider_name(c.provider)},
                                  {"gflops", rates},
                                  {"cached", c.from_cache}};
    }
    report["cache"] = sel.cache_path;
    report["machine"] = sel.machine;
    out.notes = sel.warnings;
    out.notes.push_back(fmt::format(
        "gemm: {} shapes, {} not on oneDNN; {} measured now, {} from {}", shapes.size(), off_onednn,
        sel.measured, shapes.size() - size_t(sel.measured), sel.cache_path));
  }
  choices = broadcast(choices);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto p = GemmProvider((choices >> (2 * i)) & 3);
    kernels::cpu::route_gemm(shapes[i], p);
    if (rank != 0) per_shape[shapes[i].str()] = {{"provider", kernels::cpu::provider_name(p)}};
  }
  report["shapes"] = per_shape;
  return out;
}

}  // namespace hybrid::engine
