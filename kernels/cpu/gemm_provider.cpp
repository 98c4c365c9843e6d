#include "kernels/cpu/gemm_provider.h"

#include <array>
#include <atomic>
#include <charconv>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/openblas.h"

namespace hybrid::kernels::cpu {

namespace {

struct Routes {
  std::shared_mutex mutex;
  std::optional<GemmProvider> forced;
  std::vector<std::pair<GemmShape, GemmProvider>> routes;  // a model has a dozen shapes
};

Routes& routes() {
  static Routes r;
  return r;
}

std::array<std::atomic<uint64_t>, std::size(kGemmProviders)> g_calls{};

bool parse_int(std::string_view s, int& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

}  // namespace

std::string_view provider_name(GemmProvider p) {
  switch (p) {
    case GemmProvider::onednn:
      return "onednn";
    case GemmProvider::openblas:
      return "openblas";
    case GemmProvider::avx512bf16:
      return "avx512bf16";
  }
  return "?";
}

std::optional<GemmProvider> parse_provider(std::string_view name) {
  for (GemmProvider p : kGemmProviders)
    if (provider_name(p) == name) return p;
  return std::nullopt;
}

std::string GemmShape::str() const {
  return std::string(dtype_name(dt)) + " " + (trans_a ? "T" : "N") + (trans_b ? "T" : "N") + " " +
         std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

std::optional<GemmShape> GemmShape::parse(std::string_view text) {
  const size_t s1 = text.find(' '), s2 = text.find(' ', s1 + 1);
  if (s1 == std::string_view::npos || s2 != s1 + 3) return std::nullopt;
  GemmShape g;
  const std::string_view dt = text.substr(0, s1), ops = text.substr(s1 + 1, 2);
  std::string_view dims = text.substr(s2 + 1);
  bool known = false;
  for (DType d : {DType::f32, DType::f16, DType::bf16})
    if (dtype_name(d) == dt) g.dt = d, known = true;
  if (!known || (ops[0] != 'N' && ops[0] != 'T') || (ops[1] != 'N' && ops[1] != 'T'))
    return std::nullopt;
  g.trans_a = ops[0] == 'T';
  g.trans_b = ops[1] == 'T';
  const size_t x1 = dims.find('x'), x2 = dims.find('x', x1 + 1);
  if (x1 == std::string_view::npos || x2 == std::string_view::npos ||
      !parse_int(dims.substr(0, x1), g.M) || !parse_int(dims.substr(x1 + 1, x2 - x1 - 1), g.N) ||
      !parse_int(dims.substr(x2 + 1), g.K))
    return std::nullopt;
  return g;
}

bool provider_available(GemmProvider p, std::string* why) {
  if (p == GemmProvider::onednn) return true;
  if (p == GemmProvider::avx512bf16) {
    if (!bf16_kernel_available() && why) *why = "the CPU has no AVX512_BF16";
    return bf16_kernel_available();
  }
  const openblas::Library& lib = openblas::library();
  if (!lib.loaded && why) *why = lib.error;
  return lib.loaded;
}

bool provider_supports(GemmProvider p, DType dt) {
  return p != GemmProvider::avx512bf16 || dt == DType::bf16;
}

std::vector<GemmProvider> usable_gemm_providers(DType dt) {
  std::vector<GemmProvider> out;
  for (GemmProvider p : kGemmProviders)
    if (provider_available(p) && provider_supports(p, dt)) out.push_back(p);
  return out;
}

void force_gemm_provider(std::optional<GemmProvider> p) {
  std::unique_lock lock(routes().mutex);
  routes().forced = p;
}

std::optional<GemmProvider> forced_gemm_provider() {
  std::shared_lock lock(routes().mutex);
  return routes().forced;
}

void route_gemm(const GemmShape& shape, GemmProvider p) {
  std::unique_lock lock(routes().mutex);
  for (auto& [s, provider] : routes().routes)
    if (s == shape) {
      provider = p;
      return;
    }
  routes().routes.emplace_back(shape, p);
}

void clear_gemm_routes() {
  std::unique_lock lock(routes().mutex);
  routes().routes.clear();
  routes().forced.reset();
}

GemmRoutes gemm_routes() {
  std::shared_lock lock(routes().mutex);
  return {routes().forced, routes().routes};
}

void restore_gemm_routes(const GemmRoutes& r) {
  force_gemm_provider(r.forced);
  for (const auto& [shape, p] : r.routes) route_gemm(shape, p);
}

GemmProvider gemm_route(const GemmShape& shape) {
  std::shared_lock lock(routes().mutex);
  if (routes().forced) return *routes().forced;
  for (const auto& [s, provider] : routes().routes)
    if (s == shape) return provider;
  return GemmProvider::onednn;
}

uint64_t gemm_calls(GemmProvider p) { return g_calls[size_t(p)].load(); }
void count_gemm_call(GemmProvider p) { g_calls[size_t(p)].fetch_add(1, std::memory_order_relaxed); }

}  // namespace hybrid::kernels::cpu
