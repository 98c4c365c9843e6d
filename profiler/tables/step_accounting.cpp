#include "profiler/tables/step_accounting.h"

#include <algorithm>
#include <map>
#include <utility>

#include "profiler/intervals.h"

namespace hybrid::profiler {

bool is_comm_wait(const Event& e) {
  return e.category == Category::comm && e.lane != kLaneComm && e.lane < kLaneGpuBase;
}

bool is_collective(const Event& e) { return e.category == Category::comm && e.lane == kLaneComm; }

namespace {

constexpr double kMsPerNs = 1e-6;

bool attributes_waits(Category c) {
  return c == Category::forward || c == Category::backward || c == Category::optimizer ||
         c == Category::recompute;
}

void account_rank(std::vector<const Event*>& evs, const Intervals& collectives,
                  RankStepAccount& acc) {
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
      const int64_t exposed = covered(collectives, e->start_ns, e->start_ns + e->dur_ns);
      const WaitSplit w{double(exposed) * kMsPerNs, double(e->dur_ns - exposed) * kMsPerNs};
      acc.all_waits += w;
      if (open.empty()) {
        acc.outside_waits += w;
      } else if (open.back()->category == Category::optimizer) {
        acc.optimizer_waits += w;
      } else {
        ModuleWaits& m = acc.module_waits[open.back()->module_id];
        const Category c = open.back()->category;
        (c == Category::forward ? m.fwd : c == Category::recompute ? m.recompute : m.bwd) += w;
      }
      continue;
    }
    if (!attributes_waits(e->category) || e->lane != kLaneCompute) continue;
    if (e->category == Category::optimizer) {
      if (optimizer_depth == 0) acc.optimizer_ms += double(e->dur_ns) * kMsPerNs;
      ++optimizer_depth;
    }
    open.push_back(e);
  }
}

}  // namespace

std::vector<RankStepAccount> account_step(const EventSet& events, int64_t step) {
  std::map<int, std::vector<const Event*>> by_rank;
  std::map<int, Intervals> collectives;
  for (const Event& e : events.events) {
    if (is_collective(e)) collectives[e.rank].emplace_back(e.start_ns, e.start_ns + e.dur_ns);
    if (e.step != step || e.lane >= kLaneGpuBase) continue;  // device records are not host scopes
    by_rank[e.rank].push_back(&e);
  }
  std::vector<RankStepAccount> out;
  for (auto& [rank, evs] : by_rank) {
    RankStepAccount acc;
    acc.rank = rank;
    account_rank(evs, merged(std::move(collectives[rank])), acc);
    out.push_back(std::move(acc));
  }
  return out;
}

}  // namespace hybrid::profiler
