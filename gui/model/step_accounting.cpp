#include "gui/model/step_accounting.h"

#include <algorithm>
#include <map>

namespace hybrid::gui {

using profiler::Category;
using profiler::Event;

bool is_comm_wait(const Event& e) {
  return e.category == Category::comm && e.lane != profiler::kLaneComm;
}

namespace {

bool attributes_waits(Category c) {
  return c == Category::forward || c == Category::backward || c == Category::optimizer;
}

constexpr double kMsPerNs = 1e-6;

void account_rank(std::vector<const Event*>& evs, RankStepAccount& acc) {
  // Outer scopes first: by start, and the longer of two that start together.
  std::sort(evs.begin(), evs.end(), [](const Event* a, const Event* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->dur_ns > b->dur_ns;
  });
  std::vector<const Event*> open;  // scopes that attribute waits, innermost last
  int optimizer_depth = 0;
  for (const Event* e : evs) {
    while (!open.empty() && open.back()->start_ns + open.back()->dur_ns <= e->start_ns) {
      if (open.back()->category == Category::optimizer) --optimizer_depth;
      open.pop_back();
    }
    if (e->category == Category::step) {
      acc.step_event_ms = acc.step_event_ms.value_or(0) + double(e->dur_ns) * kMsPerNs;
      continue;
    }
    if (is_comm_wait(*e)) {
      const double ms = double(e->dur_ns) * kMsPerNs;
      acc.exposed_total_ms += ms;
      if (open.empty()) {
        acc.exposed_outside_ms += ms;
      } else if (open.back()->category == Category::optimizer) {
        acc.optimizer_exposed_ms += ms;
      } else {
        ModuleWaits& w = acc.module_waits[open.back()->module_id];
        (open.back()->category == Category::forward ? w.fwd_ms : w.bwd_ms) += ms;
      }
      continue;
    }
    if (!attributes_waits(e->category) || e->lane != profiler::kLaneCompute) continue;
    if (e->category == Category::optimizer) {
      if (optimizer_depth == 0) acc.optimizer_ms += double(e->dur_ns) * kMsPerNs;
      ++optimizer_depth;
    }
    open.push_back(e);
  }
}

}  // namespace

std::vector<RankStepAccount> account_step(const profiler::EventSet& events, int64_t step) {
  std::map<int, std::vector<const Event*>> by_rank;
  for (const Event& e : events.events) {
    if (e.step != step) continue;
    if (e.lane >= profiler::kLaneGpuBase) continue;  // device records are not host scopes
    by_rank[e.rank].push_back(&e);
  }
  std::vector<RankStepAccount> out;
  for (auto& [rank, evs] : by_rank) {
    RankStepAccount acc;
    acc.rank = rank;
    account_rank(evs, acc);
    out.push_back(std::move(acc));
  }
  return out;
}

}  // namespace hybrid::gui
