// Where the time of one profiled step went on each rank, from its events: how long
// the optimizer ran, and where the compute thread waited for communication —
// inside a module's forward or backward, inside the optimizer, or outside both.
// Layer stats alone cannot tell this; events can, because a wait event lies
// inside the scopes that were open when the thread blocked.
//
// A wait is split the way the comm tracer books exposed time: the part during
// which a collective of the rank was in flight is exposed communication (waits ∩
// collectives, so never more than the communication itself); the rest is a wait
// with no collective in flight (the collective had not started on this rank yet).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

// Waits of one kind of scope: exposed (a collective in flight) and blocked (none).
struct WaitSplit {
  double exposed_ms = 0;
  double blocked_ms = 0;
  double total_ms() const { return exposed_ms + blocked_ms; }
  WaitSplit& operator+=(const WaitSplit& o) {
    exposed_ms += o.exposed_ms;
    blocked_ms += o.blocked_ms;
    return *this;
  }
};

struct ModuleWaits {
  WaitSplit fwd;        // waits whose innermost open scope was this module's forward
  WaitSplit bwd;        // ... its backward
  WaitSplit recompute;  // ... its forward run again in backward (activation checkpointing)
};

struct RankStepAccount {
  int rank = 0;
  std::optional<double> step_event_ms;  // a Category::step event on this rank, if recorded
  double optimizer_ms = 0;              // outermost optimizer scopes
  WaitSplit optimizer_waits;            // waits inside them
  WaitSplit outside_waits;              // waits inside no module and no optimizer scope
  WaitSplit all_waits;                  // every wait of the step
  // Waits booked to the innermost module scope only (exclusive); callers add
  // them up the module tree for inclusive figures.
  std::unordered_map<int32_t, ModuleWaits> module_waits;
};

// A wait is an event of category comm on the compute lane (CommTracer::record_wait);
// collectives themselves are on the comm lane.
bool is_comm_wait(const Event& e);
bool is_collective(const Event& e);

// One account per rank that has events in `step`, by rank. Collectives of any
// step in `events` count as in flight (a wait may cover one issued in the step before).
std::vector<RankStepAccount> account_step(const EventSet& events, int64_t step);

}  // namespace hybrid::profiler
