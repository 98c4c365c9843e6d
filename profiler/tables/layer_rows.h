// Layer rows (LayerStat) from a run's events: what the run recorder stores for
// the profiled steps and what an imported trace's analysis computes; both call
// layer_rows, nothing else aggregates scopes into layers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "profiler/event.h"
#include "profiler/profile_data.h"

namespace hybrid::profiler {

struct LayerRowOptions {
  // The modules whose own FLOPs are multiply-accumulates (matmuls): they count
  // FLOPs / 2 MACs, and so do their ancestors.
  std::span<const int32_t> mac_modules;
  // The events hold device records (kernels, copies) of the scopes: a row's
  // fwd/bwd/recompute times become its device times and the scopes' times move
  // to host_*_ns (apply_device_times). Otherwise host_*_ns equal the scopes' times.
  bool device_times = false;
};

// One row per (step, rank, module) with forward, backward or recompute scopes,
// sorted by (step, rank, module). Times are the module's own scopes' (inclusive
// as measured); FLOPs and MACs, recorded by the module that runs the op, are
// added up the tree of `modules` so that every row is inclusive too (their
// ancestors get rows). Recomputation (activation checkpointing) has its own
// columns, inclusive too: an outermost recompute scope (its parent not
// recomputing in that step) runs inside its ancestors' backward scopes, so for
// them its time moves from backward to recompute, and fwd + bwd + recompute is
// every row's time.
std::vector<LayerStat> layer_rows(std::span<const Event> events,
                                  std::span<const ModuleInfo> modules,
                                  const LayerRowOptions& options = {});

}  // namespace hybrid::profiler
