#include "profiler/tables/collective_groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace hybrid::profiler {

namespace {

constexpr double kMsPerNs = 1e-6;

void add_row(CollectiveGroup& g, std::set<int>& ranks, const CommStatRow& c) {
  const bool first = g.calls.empty();
  ranks.insert(c.rank);
  g.count += c.count;
  g.total_ns += c.total_ns;
  g.min_ns = first ? c.min_ns : std::min(g.min_ns, c.min_ns);
  g.max_ns = first ? c.max_ns : std::max(g.max_ns, c.max_ns);
  g.calls.push_back(double(c.count));
  g.total_ms.push_back(double(c.total_ns) * kMsPerNs);
  g.latency_ms.push_back(c.count > 0 ? double(c.total_ns) * kMsPerNs / double(c.count) : 0.0);
  g.algbw_gbps.push_back(c.algbw_gbps);
  g.busbw_gbps.push_back(c.busbw_gbps);
}

// Means over distinct ranks (the report's per-rank figures), minima over rows.
void finish(CollectiveGroup& g, const std::set<int>& ranks) {
  g.ranks = int(ranks.size());
  const double n = double(ranks.size());
  double alg = 0, bus = 0;
  for (double v : g.algbw_gbps) alg += v;
  for (double v : g.busbw_gbps) bus += v;
  g.algbw_mean = alg / n;
  g.busbw_mean = bus / n;
  g.algbw_min = *std::min_element(g.algbw_gbps.begin(), g.algbw_gbps.end());
  g.busbw_min = *std::min_element(g.busbw_gbps.begin(), g.busbw_gbps.end());
}

}  // namespace

std::vector<CollectiveGroup> group_collectives(const RunProfile& p) {
  using Key = std::tuple<std::string, std::string, bool, uint64_t>;  // op, group, inter, size
  std::map<Key, std::pair<CollectiveGroup, std::set<int>>> groups;
  for (const CommStatRow& c : p.comm) {
    auto& [g, ranks] = groups[{c.op, c.group, c.link == "inter_host", c.bytes}];
    if (g.calls.empty()) g.link = c.link, g.comm_group = c.group;
    add_row(g, ranks, c);
  }
  std::vector<CollectiveGroup> out;
  for (auto& [key, entry] : groups) {
    auto& [g, ranks] = entry;
    g.op = std::get<0>(key);
    g.bytes = std::get<3>(key);
    finish(g, ranks);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<LinkTotals> link_totals(const std::vector<CollectiveGroup>& groups) {
  std::map<bool, std::pair<LinkTotals, double>> by_link;  // false (intra) first; Σ calls
  for (const CollectiveGroup& g : groups) {
    if (g.op.rfind("nvme_", 0) == 0) continue;  // offload I/O shares the rows
    auto& [t, calls] = by_link[g.link == "inter_host"];
    t.link = g.link;
    t.ranks = std::max(t.ranks, g.ranks);
    const double n = double(g.ranks);
    t.calls += double(g.count) / n;
    t.bytes += double(g.count) / n * double(g.bytes);
    t.ns += double(g.total_ns) / n;
    for (size_t i = 0; i < g.busbw_gbps.size(); ++i) {
      t.busbw_mean += g.calls[i] * g.busbw_gbps[i];
      calls += g.calls[i];
    }
  }
  std::vector<LinkTotals> out;
  for (auto& [inter, entry] : by_link) {
    auto& [t, calls] = entry;
    t.busbw_mean = calls > 0 ? t.busbw_mean / calls : 0.0;
    out.push_back(t);
  }
  return out;
}

CommSteps comm_per_step(const RunProfile& p) {
  struct Acc {
    std::vector<double> compute, comm, exposed;
  };
  std::map<int64_t, Acc> steps;
  for (const StepRankRow& r : p.step_ranks) {
    Acc& a = steps[r.step];
    a.compute.push_back(r.compute_ms);
    a.comm.push_back(r.comm_ms);
    a.exposed.push_back(r.exposed_comm_ms);
  }
  CommSteps out;
  for (const auto& [step, a] : steps) {
    StepComm s{step, int(a.comm.size()), Spread::of(a.compute), Spread::of(a.comm),
               Spread::of(a.exposed)};
    for (double v : a.comm) s.comm_sum_ms += v;
    for (double v : a.exposed) s.exposed_sum_ms += v;
    out.comm_ms += s.comm_ms.mean;
    out.exposed_ms += s.exposed_ms.mean;
    out.steps.push_back(std::move(s));
  }
  return out;
}

}  // namespace hybrid::profiler
