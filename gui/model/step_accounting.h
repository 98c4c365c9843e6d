// Where the time of one profiled step went on each rank, from its events: how long
// the optimizer ran, and where the compute thread waited for communication
// (exposed comm) — inside a module's forward or backward, inside the optimizer,
// or outside both. Layer stats alone cannot tell this; events can, because a wait
// event lies inside the scopes that were open when the thread blocked.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::gui {

struct ModuleWaits {
  double fwd_ms = 0;  // waits whose innermost open scope was this module's forward
  double bwd_ms = 0;  // ... its backward
};

struct RankStepAccount {
  int rank = 0;
  std::optional<double> step_event_ms;  // a Category::step event on this rank, if recorded
  double optimizer_ms = 0;              // outermost optimizer scopes
  double optimizer_exposed_ms = 0;      // waits inside them
  double exposed_outside_ms = 0;        // waits inside no module and no optimizer scope
  double exposed_total_ms = 0;          // every wait of the step
  // Waits booked to the innermost module scope only (exclusive); callers add
  // them up the module tree for inclusive figures.
  std::unordered_map<int32_t, ModuleWaits> module_waits;
};

// A wait is an event of category comm on the compute lane (CommTracer::record_wait);
// collectives themselves are on the comm lane and never count as exposed.
bool is_comm_wait(const profiler::Event& e);

// One account per rank that has events in `step`, by rank.
std::vector<RankStepAccount> account_step(const profiler::EventSet& events, int64_t step);

}  // namespace hybrid::gui
