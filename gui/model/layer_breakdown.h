// The layer breakdown of one profiled step: one row per module of the model tree
// (forward, backward, exposed communication, FLOPs, achieved FLOP/s, share of the
// step, parameters, activation memory), plus the rows that complete the step.
//
// "The step", on each rank, is the sum of the top-level rows:
//   Σ root modules' (forward + backward       layer stats, inclusive of children
//                    + recompute)              (recompute: activation checkpointing)
// + optimizer                                  outermost optimizer scopes (events)
// + "exposed comm"                             waits in no module/optimizer scope while a
//                                              collective of the rank was in flight (events)
// + "comm wait (idle)"                         the rest of those waits: no collective in
//                                              flight (shown when > 0)
// + "other"                                    measured step time − all of the above, ≥ 0
// where the measured step time is the rank's step event when recorded, else the
// step's step_ms (rank 0's wall time). So the top-level shares sum to 100 % by
// construction, and "other" is what the profiler did not attribute (data loading,
// the loss scaler's bookkeeping, launch overhead). When the attributed time exceeds
// the measurement (clocks of different scopes), "other" is 0 and the step is the sum.
// Waits inside a module or the optimizer stay in that row (its bar shows them).
// Exposed = waits ∩ collectives, as the comm tracer books it (profiler/comm_tracer.h).
//
// Values are per rank, then shown as the mean over ranks with [min, max]; a
// share is a row's mean time over the step's mean time, so shares of the top-level
// rows sum to 100 % exactly (linearity of the mean). Children's shares are parts of
// the step too (and of their parent), never summed with it.
//
// On a GPU (RunInfo::backend "cuda": our CUDA runs and imported PyTorch traces) the
// layer stats' forward/backward are device times, the host scopes' times kept
// beside them (host_fwd_ns/host_bwd_ns: launching). Host scopes and waits do not
// describe the device, so there are no optimizer or comm rows: the step is the
// root modules' device time plus "other" (the measured step time minus that: device
// idle time and work launched outside every module). Without a measured step time
// (an imported trace has no step rows and may lack the step's event), the step is
// the sum of the attributed rows.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gui/model/stats.h"
#include "profiler/profile_data.h"

namespace hybrid::gui {

enum class LayerRowKind { module, optimizer, exposed_comm, blocked_comm, other };

// The stacked bar of a row: parts of its mean time (ms) that add up to total_ms.mean.
struct LayerBar {
  double forward = 0;    // forward compute (forward minus the waits inside it)
  double backward = 0;   // backward compute
  double recompute = 0;  // forwards run again in backward (activation checkpointing)
  double other = 0;      // optimizer compute, waits with no collective in flight, unattributed time
  double exposed = 0;    // exposed communication inside the row
};

struct LayerRow {
  LayerRowKind kind = LayerRowKind::module;
  int32_t module_id = -1;  // for module rows
  std::string name;
  std::string type;
  int depth = 0;
  int parent = -1;  // row index
  std::vector<int> children;
  Spread fwd_ms, bwd_ms;  // inclusive of child modules
  Spread recompute_ms;    // activation checkpointing; not part of bwd_ms
  Spread exposed_ms;      // exposed communication inside the row (inclusive of children)
  Spread blocked_ms;      // waits inside the row with no collective in flight
  Spread total_ms;        // fwd + bwd + recompute for modules; the row's time otherwise
  Spread host_fwd_ms, host_bwd_ms, host_recompute_ms;  // the scopes' host time (launch on a GPU)
  double fwd_flops = 0;                                // mean over ranks
  double bwd_flops = 0;
  double recompute_flops = 0;
  double flops_per_s = 0;         // (fwd + bwd + recompute FLOPs) / total time, from the means
  double share = 0;               // total_ms.mean / step_ms.mean
  uint64_t params = 0;            // including children
  uint64_t activation_bytes = 0;  // saved for backward per micro batch, including children
  int64_t calls = 0;              // forward invocations (rank mean, rounded)
  LayerBar bar;
};

struct LayerBreakdown {
  int64_t run_id = 0;
  int64_t step = -1;                    // the profiled step shown (may be -1: see has_stats)
  std::vector<int64_t> profiled_steps;  // steps with layer stats
  std::vector<int> ranks;               // ranks included
  std::vector<int> ranks_with_stats;    // ranks with layer stats in `step` (what may be chosen)
  bool device_times = false;            // fwd/bwd are device times (a GPU run)
  bool host_differs = false;            // device times whose host (launch) times differ
  bool has_recompute = false;           // some module recomputed (activation checkpointing)
  bool has_events = false;              // optimizer / exposed rows measured from events
  bool step_measured = false;           // a measured step time existed on every rank
  Spread step_ms;                       // the step as defined above
  std::vector<LayerRow> rows;           // module tree in preorder, then the step rows
  std::vector<int> top_rows;            // rows whose shares sum to 100 %

  bool has_stats() const { return !profiled_steps.empty(); }
  int find_module(int32_t module_id) const;  // row index or -1
  int find_name(std::string_view name) const;
};

struct LayerOptions {
  std::optional<int64_t> step;  // default: the last profiled step with any time
  std::optional<int> rank;      // default: every rank with layer stats
};

// Throws std::invalid_argument when options name a step or rank the profile lacks.
LayerBreakdown build_layer_breakdown(const profiler::RunProfile& profile,
                                     const profiler::EventSet& events,
                                     const LayerOptions& options = {});

// --- sorting the tree --------------------------------------------------------

enum class LayerColumn {
  tree,  // model order
  name,  // natural order: h.2 before h.10
  fwd,
  bwd,
  recompute,
  host,  // host (launch) time, fwd + bwd + recompute
  exposed,
  total,
  flops,
  flops_per_s,
  share,
  params,
  activations,
};

// The rows to show, in order: siblings sorted by the column (ties in model
// order), each row followed by its children when `expanded(row)` (always when
// `expanded` is empty).
std::vector<int> layer_display_order(const LayerBreakdown& b, LayerColumn column, bool ascending,
                                     const std::function<bool(int)>& expanded);

// Compares names with digit runs as numbers ("h.2" < "h.10"); <0, 0, >0.
int natural_compare(std::string_view a, std::string_view b);

}  // namespace hybrid::gui
