// Which library runs a CPU GEMM. The best one differs by machine (on Zen 3 oneDNN
// and OpenBLAS tie; on a Sapphire Rapids Xeon OpenBLAS's SkylakeX kernel beats
// oneDNN 2.6 in fp32), so the choice is measured per machine and per shape
// (gemm_selection.h) and recorded here as routes; cpu::gemm follows them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu {

// avx512bf16 is our own bf16-only kernel (gemm_bf16.h).
enum class GemmProvider { onednn, openblas, avx512bf16 };
inline constexpr GemmProvider kGemmProviders[] = {GemmProvider::onednn, GemmProvider::openblas,
                                                  GemmProvider::avx512bf16};

std::string_view provider_name(GemmProvider p);
std::optional<GemmProvider> parse_provider(std::string_view name);

// One GEMM problem as cpu::gemm sees it (leading dimensions aside).
struct GemmShape {
  DType dt = DType::f32;
  bool trans_a = false, trans_b = false;
  int M = 0, N = 0, K = 0;
  bool operator==(const GemmShape&) const = default;
  // "bf16 NT 1024x2304x768": dtype, op(A) and op(B) as N or T, then M x N x K.
  std::string str() const;
  static std::optional<GemmShape> parse(std::string_view text);
};

// Whether the provider can run here (OpenBLAS: the library loads; avx512bf16: the
// CPU has AVX512_BF16); `why` says why not.
bool provider_available(GemmProvider p, std::string* why = nullptr);
// Whether it computes this storage dtype (avx512bf16: bf16 only); a provider that
// does not is never chosen for it, and cpu::gemm_on runs such a call on oneDNN.
bool provider_supports(GemmProvider p, DType dt);
// The providers that can run here and compute dt: the candidates to measure.
std::vector<GemmProvider> usable_gemm_providers(DType dt);

// Routes: a forced provider applies to every shape; otherwise a shape routed by
// the selection runs on its provider, any other shape on oneDNN. A call from
// inside an OpenMP parallel region (attention's per-head GEMMs) always runs on
// oneDNN, which then stays on the calling thread; OpenBLAS would start its own.
void force_gemm_provider(std::optional<GemmProvider> p);
std::optional<GemmProvider> forced_gemm_provider();
void route_gemm(const GemmShape& shape, GemmProvider p);
void clear_gemm_routes();  // and the forced provider
GemmProvider gemm_route(const GemmShape& shape);
// The routes as they stand, to put back once another engine beside this one
// (the generation replica) has set up its own: restoring makes the snapshot's
// forced provider and routes win and keeps the newer routes of other shapes.
struct GemmRoutes {
  std::optional<GemmProvider> forced;
  std::vector<std::pair<GemmShape, GemmProvider>> routes;
};
GemmRoutes gemm_routes();
void restore_gemm_routes(const GemmRoutes& r);

// GEMM calls each provider has run in this process (what tests and reports check).
uint64_t gemm_calls(GemmProvider p);
void count_gemm_call(GemmProvider p);

}  // namespace hybrid::kernels::cpu
