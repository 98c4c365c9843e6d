#include "gui/model/comm_model.h"

#include <algorithm>
#include <map>
#include <utility>

namespace hybrid::gui {

CommSummary build_comm_summary(const profiler::RunProfile& p) {
  CommSummary s;
  struct Acc {
    std::vector<double> calls, latency, total, algbw, busbw;
    double min_ms = 0, max_ms = 0;
  };
  std::map<std::pair<std::string, uint64_t>, Acc> groups;
  for (const auto& c : p.comm) {
    Acc& a = groups[{c.op, c.bytes}];
    const double min_ms = double(c.min_ns) * 1e-6, max_ms = double(c.max_ns) * 1e-6;
    a.min_ms = a.calls.empty() ? min_ms : std::min(a.min_ms, min_ms);
    a.max_ms = a.calls.empty() ? max_ms : std::max(a.max_ms, max_ms);
    a.calls.push_back(double(c.count));
    a.total.push_back(double(c.total_ns) * 1e-6);
    a.latency.push_back(c.count > 0 ? double(c.total_ns) * 1e-6 / double(c.count) : 0.0);
    a.algbw.push_back(c.algbw_gbps);
    a.busbw.push_back(c.busbw_gbps);
  }
  for (auto& [key, a] : groups) {
    CommRow r;
    r.op = key.first;
    r.bytes = key.second;
    r.ranks = int(a.calls.size());
    r.calls = Spread::of(a.calls).mean;
    r.latency_ms = Spread::of(a.latency);
    r.min_ms = a.min_ms;
    r.max_ms = a.max_ms;
    r.total_ms = Spread::of(a.total);
    r.algbw_gbps = Spread::of(a.algbw).mean;
    r.busbw_gbps = Spread::of(a.busbw).mean;
    s.rows.push_back(std::move(r));
  }

  std::map<int64_t, std::pair<std::vector<double>, std::vector<double>>> steps;
  for (const auto& sr : p.step_ranks) {
    auto& [comm, exposed] = steps[sr.step];
    comm.push_back(sr.comm_ms);
    exposed.push_back(sr.exposed_comm_ms);
  }
  double comm_sum = 0, exposed_sum = 0;
  for (const auto& [step, v] : steps) {
    CommStepRow row{step, Spread::of(v.first), Spread::of(v.second)};
    comm_sum += row.comm_ms.mean;
    exposed_sum += row.exposed_ms.mean;
    s.steps.push_back(row);
  }
  if (!s.steps.empty()) {
    s.comm_ms_per_step = comm_sum / double(s.steps.size());
    s.exposed_ms_per_step = exposed_sum / double(s.steps.size());
  }
  return s;
}

void sort_comm_rows(std::vector<CommRow>& rows, CommColumn column, bool ascending) {
  auto key = [column](const CommRow& r) -> double {
    switch (column) {
      case CommColumn::bytes: return double(r.bytes);
      case CommColumn::calls: return r.calls;
      case CommColumn::latency: return r.latency_ms.mean;
      case CommColumn::min: return r.min_ms;
      case CommColumn::max: return r.max_ms;
      case CommColumn::total: return r.total_ms.mean;
      case CommColumn::algbw: return r.algbw_gbps;
      case CommColumn::busbw: return r.busbw_gbps;
      case CommColumn::op: break;
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [](const CommRow& a, const CommRow& b) {
    return a.op != b.op ? a.op < b.op : a.bytes < b.bytes;
  });
  std::stable_sort(rows.begin(), rows.end(), [&](const CommRow& a, const CommRow& b) {
    if (column == CommColumn::op) return ascending ? a.op < b.op : a.op > b.op;
    return ascending ? key(a) < key(b) : key(a) > key(b);
  });
}

}  // namespace hybrid::gui
