// ZeRO stage 3: 16-bit parameters live partitioned; each module's parameters
// are all-gathered right before its forward and its backward and released right
// after. The order of modules is recorded on the first pass and replayed to
// prefetch the next modules' parameters (up to stage3_prefetch_bucket_size
// elements ahead, never more than stage3_max_live_parameters live).
// Modules with fewer parameters than stage3_param_persistence_threshold stay
// gathered for good and are refreshed after each optimizer step.
#pragma once

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

class ParamGatherer {
 public:
  ParamGatherer(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
                comm::Communicator& comm, TrackingAllocator& alloc, const void* param_shard,
                CommWaitRecorder* waits, std::function<int64_t()> clock);

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
  };
  void start_gather(Unit& u);
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
  CommWaitRecorder* waits_;
  std::function<int64_t()> clock_;
  size_t dsize_;

  std::vector<Unit> units_;                     // one per module that owns parameters
  std::vector<int> unit_of_module_;             // module id → unit index (-1)
  std::vector<std::vector<int>> module_units_;  // module id → units it uses
  int64_t live_elems_ = 0;

  // Recorded order of modules that use parameters, per direction, and where
  // the current pass is in it.
  std::vector<int> order_[2];
  bool recorded_[2] = {false, false};
  size_t cursor_[2] = {0, 0};
};

}  // namespace hybrid::engine
