#include "autotune/cluster_rates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "profiler/comm_tracer.h"

namespace hybrid::autotune {

using profiler::CollectiveKind;

namespace {

void machine_defaults(ClusterRates& r, kernels::BackendKind kind) {
  const bool gpu = kind == kernels::BackendKind::cuda;
  r.memory_bytes_per_s = gpu ? 2e12 : 10e9;
  r.op_overhead_s = gpu ? 10e-6 : 20e-6;
  r.shared_cores = !gpu;
}

}  // namespace

namespace {

int ranks_of(const profiler::BandwidthSample& s, int default_ranks) {
  return s.ranks > 0 ? s.ranks : default_ranks;
}

// Log-log interpolation over (bytes, seconds) points, sorted by bytes.
double interpolate(std::vector<std::pair<double, double>> pts, double b) {
  std::sort(pts.begin(), pts.end());
  if (b <= pts.front().first) return pts.front().second;
  if (b >= pts.back().first) return pts.back().second * b / pts.back().first;
  for (size_t i = 1; i < pts.size(); ++i)
    if (b <= pts[i].first) {
      const double x0 = std::log(pts[i - 1].first), x1 = std::log(pts[i].first);
      const double y0 = std::log(pts[i - 1].second), y1 = std::log(pts[i].second);
      const double t = x1 > x0 ? (std::log(b) - x0) / (x1 - x0) : 0.0;
      return std::exp(y0 + t * (y1 - y0));
    }
  return pts.back().second;
}

}  // namespace

double ClusterRates::collective_s(CollectiveKind kind, uint64_t bytes, int world) const {
  if (bytes == 0) return 0.0;
  const std::string_view name = profiler::collective_name(kind);
  const bool have_link = std::any_of(bandwidth.begin(), bandwidth.end(),
                                     [&](const auto& s) { return s.link == link; });
  auto on_link = [&](std::string_view l) { return !have_link || l == link; };
  const bool measured_world =
      world == 0 || std::any_of(bandwidth.begin(), bandwidth.end(), [&](const auto& s) {
        return on_link(s.link) && ranks_of(s, world_size) == world;
      });
  if (measured_world) {
    const int p = world == 0 ? world_size : world;
    auto usable = [&](const profiler::BandwidthSample& s) {
      return on_link(s.link) && (world == 0 || ranks_of(s, world_size) == p);
    };
    std::vector<std::pair<double, double>> pts;  // (bytes, seconds)
    for (const auto& s : bandwidth)
      if (usable(s) && s.op == name && s.algbw_gbps > 0)
        pts.emplace_back(double(s.bytes), double(s.bytes) / (s.algbw_gbps * 1e9));
    if (pts.empty()) {
      // Not probed: derive from all-reduce's bus bandwidth and this op's bus factor.
      const double factor = profiler::bus_factor(kind, std::max(2, p));
      for (const auto& s : bandwidth)
        if (usable(s) && s.op == "all_reduce" && s.busbw_gbps > 0)
          pts.emplace_back(double(s.bytes), double(s.bytes) * factor / (s.busbw_gbps * 1e9));
    }
    if (!pts.empty()) return interpolate(std::move(pts), double(bytes)) * oversubscription();
  }
  // Another world size: the alpha–beta fit of this op (else all-reduce's
  // alpha and busbw with this op's steps and bus factor) on this link.
  const AlphaBeta* fit = nullptr;
  for (const std::string_view op : {name, std::string_view("all_reduce")})
    for (const auto& f : fits)
      if (!fit && f.op == op && on_link(f.link)) fit = &f;
  if (!fit) return double(bytes) / 1e9;  // 1 GB/s: only without any bandwidth data
  AlphaBeta as_op = *fit;
  as_op.op = std::string(name);
  return as_op.time_s(bytes, world) * oversubscription();
}

double ClusterRates::oversubscription() const {
  if (!shared_cores || host_cpus <= 0 || ranks_per_host <= 0) return 1.0;
  auto over = [&](int ranks) { return std::max(1.0, double(ranks) / host_cpus); };
  return over(ranks_per_host) / over(std::max(1, gemm_ranks));
}

double ClusterRates::rank_flops_per_s() const {
  if (!shared_cores || ranks_per_host <= 0) return gemm_flops_per_s;
  return gemm_flops_per_s * double(std::max(1, gemm_ranks)) / double(ranks_per_host);
}

ClusterRates rates_from_probe(const profiler::ProbeResult& probe, kernels::BackendKind kind) {
  ClusterRates r;
  machine_defaults(r, kind);
  r.gemm_flops_per_s = probe.gemm_flops_per_s;
  r.gemm_ranks = probe.gemm_ranks > 0 ? probe.gemm_ranks : probe.world_size;
  r.host_cpus = probe.host_cpus;
  r.bandwidth = probe.bandwidth;
  r.world_size = probe.world_size;
  r.fits = fit_alpha_beta(r.bandwidth, r.world_size);
  r.source = fmt::format("probe {} of {} ({} rank(s), {})", probe.id, probe.host, probe.world_size,
                         probe.device);
  return r;
}

ClusterRates default_rates(kernels::BackendKind kind, int world_size) {
  ClusterRates r;
  machine_defaults(r, kind);
  const bool gpu = kind == kernels::BackendKind::cuda;
  r.gemm_flops_per_s = gpu ? 300e12 : 50e9;
  r.world_size = world_size;
  // A latency floor and a bus bandwidth typical of the interconnect.
  const double latency = gpu ? 20e-6 : 30e-6, busbw = gpu ? 100e9 : 2e9;
  for (uint64_t bytes = 1 << 10; bytes <= (uint64_t(1) << 30); bytes <<= 4) {
    const double t =
        latency + double(bytes) *
                      profiler::bus_factor(CollectiveKind::all_reduce, std::max(2, world_size)) /
                      busbw;
    const double algbw = double(bytes) / t / 1e9;
    r.bandwidth.push_back(
        {"all_reduce", bytes, algbw,
         algbw * profiler::bus_factor(CollectiveKind::all_reduce, std::max(2, world_size))});
  }
  r.gemm_ranks = world_size;
  r.fits = fit_alpha_beta(r.bandwidth, r.world_size);
  r.source = "defaults (no probe)";
  return r;
}

}  // namespace hybrid::autotune
