#include "autotune/alpha_beta.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "profiler/comm_tracer.h"

namespace hybrid::autotune {

using profiler::CollectiveKind;

double ring_steps(CollectiveKind kind, int ranks) {
  const double hops = std::max(0, ranks - 1);
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2.0 * hops;
    case CollectiveKind::barrier:
      return std::ceil(std::log2(std::max(1, ranks)));
    default:
      return hops;
  }
}

double AlphaBeta::time_s(uint64_t bytes, int world) const {
  const CollectiveKind kind = profiler::parse_collective(op);
  const int p = std::max(2, world);
  const double wire = busbw_bytes_per_s > 0
                          ? double(bytes) * profiler::bus_factor(kind, p) / busbw_bytes_per_s
                          : 0.0;
  return alpha_s * ring_steps(kind, p) + wire;
}

namespace {

struct Point {
  double steps, wire_bytes, t;  // t = alpha·steps + wire_bytes / busbw
};

// Minimises Σ ((a·s + b·w) / t − 1)² over a, b ≥ 0 (b = 1 / busbw).
std::pair<double, double> fit_nonnegative(const std::vector<Point>& pts) {
  double ss = 0, sw = 0, ww = 0, s1 = 0, w1 = 0;
  for (const auto& p : pts) {
    const double s = p.steps / p.t, w = p.wire_bytes / p.t;
    ss += s * s, sw += s * w, ww += w * w, s1 += s, w1 += w;
  }
  const double det = ss * ww - sw * sw;
  if (det > 1e-12 * ss * ww) {
    const double a = (s1 * ww - w1 * sw) / det, b = (w1 * ss - s1 * sw) / det;
    if (a >= 0 && b >= 0) return {a, b};
  }
  // One term alone: whichever fits better.
  auto residual = [&](double a, double b) {
    double r = 0;
    for (const auto& p : pts) r += std::pow((a * p.steps + b * p.wire_bytes) / p.t - 1.0, 2);
    return r;
  };
  const double a_only = ss > 0 ? s1 / ss : 0.0, b_only = ww > 0 ? w1 / ww : 0.0;
  return residual(a_only, 0) < residual(0, b_only) ? std::pair{a_only, 0.0}
                                                   : std::pair{0.0, b_only};
}

}  // namespace

std::vector<AlphaBeta> fit_alpha_beta(const std::vector<profiler::BandwidthSample>& samples,
                                      int default_ranks) {
  std::map<std::pair<std::string, std::string>, std::vector<const profiler::BandwidthSample*>>
      groups;
  for (const auto& s : samples)
    if (s.algbw_gbps > 0 && s.bytes > 0) groups[{s.op, s.link}].push_back(&s);
  std::vector<AlphaBeta> fits;
  for (const auto& [key, group] : groups) {
    const CollectiveKind kind = profiler::parse_collective(key.first);
    AlphaBeta f;
    f.op = key.first;
    f.link = key.second;
    std::vector<Point> pts;
    for (const auto* s : group) {
      const int p = std::max(2, s->ranks > 0 ? s->ranks : default_ranks);
      pts.push_back({ring_steps(kind, p), double(s->bytes) * profiler::bus_factor(kind, p),
                     double(s->bytes) / (s->algbw_gbps * 1e9)});
      if (std::find(f.ranks.begin(), f.ranks.end(), p) == f.ranks.end()) f.ranks.push_back(p);
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    const auto [a, b] = fit_nonnegative(pts);
    f.alpha_s = a;
    f.busbw_bytes_per_s = b > 0 ? 1.0 / b : 0.0;
    f.samples = int(pts.size());
    for (const auto& p : pts)
      f.max_rel_error =
          std::max(f.max_rel_error, std::abs((a * p.steps + b * p.wire_bytes) / p.t - 1.0));
    fits.push_back(std::move(f));
  }
  return fits;
}

}  // namespace hybrid::autotune
