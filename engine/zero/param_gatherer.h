// ZeRO stage 3: 16-bit parameters live partitioned; each module's parameters
// are all-gathered right before its forward and its backward and released right
// after. The order of modules is recorded on the first pass and replayed to
// prefetch the next modules' parameters (up to stage3_prefetch_bucket_size
// elements ahead, never more than stage3_max_live_parameters live).
// Modules with fewer parameters than stage3_param_persistence_threshold stay
// gathered for good and are refreshed after each optimizer step.
//
// With offload_param the partition is not on the device: each gather first
// fetches this rank's slice from the ParamStore (host memory or an NVMe file)
// into its slot of the gathered buffer, then all-gathers in place. A prefetch
// only starts the fetch; the all-gathers go out in the order the fetches were
// started, at points fixed by the program order alone (a module needs the unit,
// a staging buffer is needed, or the next module starts: fetches started before
// it are due), never by when a read happens to land, so every rank issues its
// collectives in the same order. A file read thus overlaps one module's compute
// and the all-gather the next one's.
#pragma once

#include <deque>
#include <functional>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/module.h"
#include "engine/zero/partition.h"
#include "engine/zero/zero_setup.h"

namespace hybrid::engine {

class ParamStore;

class ParamGatherer {
 public:
  // param_shard: this rank's partition on the device, or null when `store`
  // holds it (offload_param).
  ParamGatherer(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
                comm::Communicator& comm, TrackingAllocator& alloc, const void* param_shard,
                ParamStore* store, CommWaitRecorder* waits, std::function<int64_t()> clock);

  // One entry per unit (module that owns parameters), in forward order:
  // persistent units resident, the others allocated on demand while gathered.
  static MemoryLayout layout(const ZeroSetup& setup, const ModuleTree& tree);

  void before(const Module& m, bool forward);
  void after(const Module& m, bool forward);
  const void* param(const ParamSpec& p) const;

  // Re-gathers the persistent units (after the optimizer changed the shards).
  void refresh_persistent();
  // Releases everything not persistent (end of a pass) and checks nothing leaked.
  void release_all();
  // Generation with hybrid_engine.pin_parameters: every unit gathered now, all
  // at once, and kept through the passes until unpin_all releases them.
  void pin_all();
  void unpin_all();

  int64_t live_elements() const { return live_elems_; }
  int64_t persistent_elements() const;

 private:
  struct Unit {
    FlatRange range;
    bool persistent = false;
    int refs = 0;
    void* data = nullptr;  // gathered parameters; null when released
    Buffer owned;          // the on-demand memory behind data (persistent: in mem_)
    comm::HandlePtr pending;
    uint64_t fetch = 0;      // offload_param: the slice's fetch, before the all-gather
    int64_t fetch_tick = 0;  // the module count when the fetch started
  };
  void start_gather(Unit& u);
  // offload_param: completes the oldest fetch and issues its all-gather.
  void issue_oldest();
  void issue_through(const Unit& u) {
    while (u.fetch) issue_oldest();
  }
  void all_gather(Unit& u);
  void ensure_live(Unit& u);
  void release(Unit& u);
  void prefetch(const std::vector<int>& order, size_t from);
  const std::vector<int>& units_of(const Module& m) const { return module_units_[size_t(m.id())]; }

  ZeroSetup setup_;
  const ModuleTree& tree_;
  const Partition& part_;
  comm::Communicator& comm_;
  LayoutBuffers mem_;
  const char* shard_;
  ParamStore* store_;
  std::deque<size_t> fetching_;  // units whose slice is being fetched, in start order
  int64_t tick_ = 0;             // before() calls so far
  CommWaitRecorder* waits_;
  std::function<int64_t()> clock_;
  size_t dsize_;

  std::vector<Unit> units_;                     // one per module that owns parameters
  std::vector<int> unit_of_module_;             // module id → unit index (-1)
  std::vector<std::vector<int>> module_units_;  // module id → units it uses
  int64_t live_elems_ = 0;
  bool pinned_ = false;  // pin_all: nothing is released until unpin_all

  // Recorded order of modules that use parameters, per direction, and where
  // the current pass is in it.
  std::vector<int> order_[2];
  bool recorded_[2] = {false, false};
  size_t cursor_[2] = {0, 0};
};

}  // namespace hybrid::engine
