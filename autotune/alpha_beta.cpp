#include "autotune/alpha_beta.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/statistics.h"
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
    case CollectiveKind::send:  // one message between two ranks, whatever the group
    case CollectiveKind::recv:
      return 1.0;
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
  double bytes, steps, wire_bytes, t;  // t = alpha·steps + wire_bytes / busbw
};

constexpr double kLargeMessage = 1 << 20;   // bandwidth-bound from here
constexpr double kSmallMessage = 64 << 10;  // latency-bound up to here

// Unweighted least squares of t = a·steps + b·wire over `pts` (absolute times:
// the largest messages decide, as they should for the bandwidth term).
std::pair<double, double> least_squares(const std::vector<const Point*>& pts) {
  double ss = 0, sw = 0, ww = 0, st = 0, wt = 0;
  for (const auto* p : pts) {
    ss += p->steps * p->steps, sw += p->steps * p->wire_bytes, ww += p->wire_bytes * p->wire_bytes;
    st += p->steps * p->t, wt += p->wire_bytes * p->t;
  }
  const double det = ss * ww - sw * sw;
  if (std::abs(det) <= 1e-12 * ss * ww) return {0.0, ww > 0 ? wt / ww : 0.0};
  return {(st * ww - wt * sw) / det, (wt * ss - st * sw) / det};
}

// The bandwidth term from the large messages (1 MiB and up), the latency term
// from the small ones (64 KiB and below; with fewer sizes, the larger and the
// smaller half): a token-bucket shaper lets small messages through at line
// rate, so one fit over all sizes would mistake the burst for the link's rate.
std::pair<double, double> fit_terms(std::vector<Point> pts) {
  std::sort(pts.begin(), pts.end(),
            [](const Point& a, const Point& b) { return a.bytes < b.bytes; });
  std::vector<const Point*> large, small;
  for (const auto& p : pts) {
    if (p.bytes >= kLargeMessage) large.push_back(&p);
    if (p.bytes <= kSmallMessage) small.push_back(&p);
  }
  if (large.size() < 2 || small.size() < 2) {  // few sizes: the larger and the smaller half
    large.clear(), small.clear();
    for (size_t i = 0; i < pts.size(); ++i)
      (2 * i + 1 >= pts.size() ? large : small).push_back(&pts[i]);
  }
  auto [a, b] = least_squares(large);
  // No growth with size (to rounding): latency alone.
  if (b * large.back()->wire_bytes <= 1e-9 * large.back()->t) {
    std::vector<double> per_step;
    for (const auto& p : pts) per_step.push_back(p.t / std::max(1.0, p.steps));
    return {base::median(per_step), 0.0};
  }
  // The latency from the small messages with a bandwidth term of their own
  // (under a shaper, the burst's line rate).
  // (under a shaper, the burst's line rate); when noise defeats that fit, the
  // smallest time per step bounds the latency from above.
  const auto [a_small, b_small] = least_squares(small);
  a = a_small;
  if (a_small < 0 || b_small < 0) {
    a = small.front()->t / std::max(1.0, small.front()->steps);
    for (const auto* p : small) a = std::min(a, p->t / std::max(1.0, p->steps));
  }
  return {std::max(0.0, a), b};
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
      pts.push_back({double(s->bytes), ring_steps(kind, p),
                     double(s->bytes) * profiler::bus_factor(kind, p),
                     double(s->bytes) / (s->algbw_gbps * 1e9)});
      if (std::find(f.ranks.begin(), f.ranks.end(), p) == f.ranks.end()) f.ranks.push_back(p);
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    const auto [a, b] = fit_terms(pts);
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
