#include "profiler/tables/layer_rows.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "profiler/gpu_timeline.h"

namespace hybrid::profiler {

namespace {

bool is_layer_scope(const Event& e) {
  return e.module_id >= 0 && (e.category == Category::forward || e.category == Category::backward ||
                              e.category == Category::recompute);
}

class LayerRows {
 public:
  LayerRows(std::span<const ModuleInfo> modules, std::span<const int32_t> mac_modules)
      : macs_(mac_modules.begin(), mac_modules.end()) {
    for (const ModuleInfo& m : modules) parent_[m.id] = m.parent_id;
    hop_limit_ = modules.size();
  }

  // (step, rank, module) with a recompute scope.
  void note_recompute(const Event& e) {
    if (e.category == Category::recompute) recomputing_.insert({e.step, e.rank, e.module_id});
  }

  void add(const Event& e) {
    LayerStat& own = row(e, e.module_id);
    if (e.category == Category::forward) own.fwd_ns += e.dur_ns, ++own.calls;
    if (e.category == Category::backward) own.bwd_ns += e.dur_ns;
    if (e.category == Category::recompute) own.recompute_ns += e.dur_ns;
    const bool moves = e.category == Category::recompute &&
                       !recomputing_.count({e.step, e.rank, parent(e.module_id)});
    if (e.flops == 0 && !moves) return;  // nothing for the ancestors
    const uint64_t macs = macs_.count(e.module_id) ? e.flops / 2 : 0;
    size_t hops = 0;  // a malformed (cyclic) table ends the walk
    for (int32_t m = e.module_id; m >= 0 && hops++ <= hop_limit_; m = parent(m)) {
      LayerStat& r = row(e, m);
      if (e.category == Category::recompute) {
        r.recompute_flops += e.flops;
        if (m != e.module_id && moves) r.recompute_ns += e.dur_ns, r.bwd_ns -= e.dur_ns;
      } else {
        const bool fwd = e.category == Category::forward;
        (fwd ? r.fwd_flops : r.bwd_flops) += e.flops;
        (fwd ? r.fwd_macs : r.bwd_macs) += macs;
      }
    }
  }

  std::vector<LayerStat> take() {
    std::vector<LayerStat> out;
    out.reserve(rows_.size());
    for (auto& [key, r] : rows_) out.push_back(r);
    return out;
  }

 private:
  int32_t parent(int32_t m) const {
    const auto it = parent_.find(m);
    return it == parent_.end() ? -1 : it->second;
  }
  LayerStat& row(const Event& e, int32_t m) {
    LayerStat& r = rows_[{e.step, e.rank, m}];
    r.rank = e.rank;
    r.module_id = m;
    r.step = e.step;
    return r;
  }

  std::unordered_map<int32_t, int32_t> parent_;
  std::unordered_set<int32_t> macs_;
  size_t hop_limit_ = 0;
  std::set<std::tuple<int64_t, int, int32_t>> recomputing_;
  std::map<std::tuple<int64_t, int, int32_t>, LayerStat> rows_;
};

}  // namespace

std::vector<LayerStat> layer_rows(std::span<const Event> events,
                                  std::span<const ModuleInfo> modules,
                                  const LayerRowOptions& options) {
  LayerRows rows(modules, options.mac_modules);
  for (const Event& e : events)
    if (is_layer_scope(e)) rows.note_recompute(e);
  for (const Event& e : events)
    if (is_layer_scope(e)) rows.add(e);
  auto out = rows.take();
  if (options.device_times) {
    apply_device_times(out, device_time_by_module(events, modules));
  } else {
    for (LayerStat& r : out)
      r.host_fwd_ns = r.fwd_ns, r.host_bwd_ns = r.bwd_ns, r.host_recompute_ns = r.recompute_ns;
  }
  return out;
}

}  // namespace hybrid::profiler
