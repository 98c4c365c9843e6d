#include "gui/model/comm_model.h"

#include <algorithm>
#include <utility>

#include "profiler/tables/collective_groups.h"

namespace hybrid::gui {

CommSummary build_comm_summary(const profiler::RunProfile& p) {
  CommSummary s;
  for (const profiler::CollectiveGroup& g : profiler::group_collectives(p)) {
    CommRow r;
    r.op = g.op;
    r.link = g.link;
    r.group = g.comm_group;
    r.bytes = g.bytes;
    r.ranks = g.ranks;
    r.calls = Spread::of(g.calls).mean;
    r.latency_ms = Spread::of(g.latency_ms);
    r.min_ms = double(g.min_ns) * 1e-6;
    r.max_ms = double(g.max_ns) * 1e-6;
    r.total_ms = Spread::of(g.total_ms);
    r.algbw_gbps = Spread::of(g.algbw_gbps).mean;
    r.busbw_gbps = Spread::of(g.busbw_gbps).mean;
    s.rows.push_back(std::move(r));
  }
  s.bubbles = profiler::stage_bubbles(p);
  const profiler::CommSteps steps = profiler::comm_per_step(p);
  for (const profiler::StepComm& st : steps.steps)
    s.steps.push_back({st.step, st.comm_ms, st.exposed_ms});
  if (!s.steps.empty()) {
    s.comm_ms_per_step = steps.comm_ms / double(s.steps.size());
    s.exposed_ms_per_step = steps.exposed_ms / double(s.steps.size());
  }
  return s;
}

void sort_comm_rows(std::vector<CommRow>& rows, CommColumn column, bool ascending) {
  auto key = [column](const CommRow& r) -> double {
    switch (column) {
      case CommColumn::bytes:
        return double(r.bytes);
      case CommColumn::calls:
        return r.calls;
      case CommColumn::latency:
        return r.latency_ms.mean;
      case CommColumn::min:
        return r.min_ms;
      case CommColumn::max:
        return r.max_ms;
      case CommColumn::total:
        return r.total_ms.mean;
      case CommColumn::algbw:
        return r.algbw_gbps;
      case CommColumn::busbw:
        return r.busbw_gbps;
      case CommColumn::op:
        break;
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [](const CommRow& a, const CommRow& b) {
    if (a.op != b.op) return a.op < b.op;
    if (a.group != b.group) return a.group < b.group;
    if (a.link != b.link) return a.link == "intra_host";
    return a.bytes < b.bytes;
  });
  std::stable_sort(rows.begin(), rows.end(), [&](const CommRow& a, const CommRow& b) {
    if (column == CommColumn::op) return ascending ? a.op < b.op : a.op > b.op;
    return ascending ? key(a) < key(b) : key(a) > key(b);
  });
}

}  // namespace hybrid::gui
