#include "profiler/gpu_timeline.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "base/text.h"
#include "profiler/intervals.h"
#include "profiler/tables/layer_rows.h"

namespace hybrid::profiler {

namespace {

// The three unions of one rank, swept together: each elementary segment between
// two boundaries belongs to exactly one mask.
std::array<int64_t, kGpuWorkMasks> exclusive_lengths(const std::array<Intervals, 3>& unions,
                                                     int64_t first, int64_t last) {
  struct Edge {
    int64_t t;
    int bit;
    bool open;
  };
  std::vector<Edge> edges;
  for (int k = 0; k < 3; ++k)
    for (auto [s, e] : unions[size_t(k)]) {
      edges.push_back({s, 1 << k, true});
      edges.push_back({e, 1 << k, false});
    }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  std::array<int64_t, kGpuWorkMasks> out{};
  int mask = 0;
  int64_t at = first;
  for (const Edge& e : edges) {
    out[size_t(mask)] += e.t - at;
    at = e.t;
    mask = e.open ? (mask | e.bit) : (mask & ~e.bit);
  }
  out[0] += last - at;
  return out;
}

GpuRankTimeline analyze_rank(int rank, std::span<const Event* const> records,
                             std::span<const std::string> names) {
  GpuRankTimeline t;
  t.rank = rank;
  std::array<Intervals, 3> by_work;
  t.first_start_ns = INT64_MAX;
  t.last_end_ns = INT64_MIN;
  for (const Event* e : records) {
    std::string_view name;  // (a ?: with "" would bind the view to a temporary string)
    if (e->name_id < names.size()) name = names[e->name_id];
    const GpuWork w = classify_gpu_record(e->category, name);
    by_work[size_t(w)].emplace_back(e->start_ns, e->start_ns + e->dur_ns);
    t.first_start_ns = std::min(t.first_start_ns, e->start_ns);
    t.last_end_ns = std::max(t.last_end_ns, e->start_ns + e->dur_ns);
    if (w == GpuWork::computation) ++t.computation_kernels;
    if (w == GpuWork::communication) ++t.communication_kernels;
    if (w == GpuWork::memory) ++t.memory_records;
  }
  for (auto& u : by_work) u = merged(std::move(u));
  const Intervals& compute = by_work[size_t(GpuWork::computation)];
  const Intervals& comm = by_work[size_t(GpuWork::communication)];
  t.span_ns = t.last_end_ns - t.first_start_ns;
  t.exclusive_ns = exclusive_lengths(by_work, t.first_start_ns, t.last_end_ns);
  t.idle_ns = t.exclusive_ns[0];
  t.compute_ns = total_length(compute);
  t.non_compute_ns = t.span_ns - t.compute_ns - t.idle_ns;
  t.comm_ns = total_length(comm);
  t.memory_ns = total_length(by_work[size_t(GpuWork::memory)]);
  t.comm_overlap_ns = overlap(compute, comm);
  t.exposed_comm_ns = t.comm_ns - t.comm_overlap_ns;
  return t;
}

}  // namespace

std::string_view to_string(GpuWork w) {
  switch (w) {
    case GpuWork::computation:
      return "computation";
    case GpuWork::communication:
      return "communication";
    case GpuWork::memory:
      return "memory";
  }
  return "computation";
}

bool is_gpu_record(const Event& e) {
  return e.category == Category::kernel || e.category == Category::memcpy;
}

GpuWork classify_gpu_record(Category category, std::string_view name) {
  if (category == Category::memcpy) return GpuWork::memory;
  if (base::contains_ignore_case(name, "nccl") || base::contains_ignore_case(name, "rccl"))
    return GpuWork::communication;
  return GpuWork::computation;
}

std::string gpu_work_mask_name(int mask) {
  if (mask == 0) return "idle";
  std::string out;
  for (int k = 0; k < 3; ++k) {
    if (!(mask & (1 << k))) continue;
    if (!out.empty()) out += " + ";
    out += to_string(GpuWork(k));
  }
  return out;
}

std::optional<double> GpuRankTimeline::comm_comp_overlap_pct() const {
  if (comm_ns <= 0) return std::nullopt;
  return 100.0 * double(comm_overlap_ns) / double(comm_ns);
}

std::vector<GpuRankTimeline> analyze_gpu_timeline(std::span<const Event> events,
                                                  std::span<const std::string> names) {
  std::map<int, std::vector<const Event*>> by_rank;
  for (const Event& e : events)
    if (is_gpu_record(e)) by_rank[e.rank].push_back(&e);
  std::vector<GpuRankTimeline> out;
  for (const auto& [rank, records] : by_rank) out.push_back(analyze_rank(rank, records, names));
  return out;
}

std::vector<ModuleDeviceTime> device_time_by_module(std::span<const Event> events,
                                                    std::span<const ModuleInfo> modules) {
  std::unordered_map<int32_t, int32_t> parent;
  for (const ModuleInfo& m : modules) parent[m.id] = m.parent_id;
  std::map<std::tuple<int, int64_t, int32_t>, ModuleDeviceTime> rows;
  for (const Event& e : events) {
    if (!is_gpu_record(e) || e.module_id < 0) continue;
    bool direct = true;
    // Up the tree; a module missing from the table ends the walk, and the hop
    // limit guards against a malformed (cyclic) table.
    size_t hops = 0;
    for (int32_t m = e.module_id; m >= 0 && hops++ <= modules.size();) {
      ModuleDeviceTime& r = rows[{e.rank, e.step, m}];
      r.rank = e.rank;
      r.step = e.step;
      r.module_id = m;
      if (direct) ++r.records;
      direct = false;
      if (e.scope == Category::forward)
        r.fwd_ns += e.dur_ns;
      else if (e.scope == Category::backward)
        r.bwd_ns += e.dur_ns;
      else if (e.scope == Category::recompute)
        r.recompute_ns += e.dur_ns;
      else
        r.other_ns += e.dur_ns;
      auto it = parent.find(m);
      m = it == parent.end() ? -1 : it->second;
    }
  }
  std::vector<ModuleDeviceTime> out;
  out.reserve(rows.size());
  for (auto& [key, r] : rows) out.push_back(r);
  return out;
}

std::vector<StepRankRow> gpu_step_accounting(std::span<const Event> events,
                                             std::span<const std::string> names) {
  std::map<std::pair<int64_t, int>, std::vector<const Event*>> groups;
  for (const Event& e : events)
    if (is_gpu_record(e) && e.step >= 0) groups[{e.step, e.rank}].push_back(&e);
  std::vector<StepRankRow> out;
  for (const auto& [key, records] : groups) {
    const GpuRankTimeline t = analyze_rank(key.second, records, names);
    out.push_back({key.first, key.second, double(t.compute_ns) / 1e6, double(t.comm_ns) / 1e6,
                   double(t.exposed_comm_ns) / 1e6});
  }
  return out;
}

void apply_device_times(std::vector<LayerStat>& rows, std::span<const ModuleDeviceTime> device) {
  std::map<std::tuple<int, int64_t, int32_t>, const ModuleDeviceTime*> by_key;
  for (const ModuleDeviceTime& d : device) by_key[{d.rank, d.step, d.module_id}] = &d;
  for (LayerStat& r : rows) {
    r.host_fwd_ns = r.fwd_ns;
    r.host_bwd_ns = r.bwd_ns;
    r.host_recompute_ns = r.recompute_ns;
    auto it = by_key.find({r.rank, r.step, r.module_id});
    r.fwd_ns = it == by_key.end() ? 0 : it->second->fwd_ns;
    r.bwd_ns = it == by_key.end() ? 0 : it->second->bwd_ns;
    r.recompute_ns = it == by_key.end() ? 0 : it->second->recompute_ns;
    if (it != by_key.end()) by_key.erase(it);
  }
  for (const auto& [key, d] : by_key) {
    LayerStat r;
    r.rank = d->rank;
    r.step = d->step;
    r.module_id = d->module_id;
    r.fwd_ns = d->fwd_ns;
    r.bwd_ns = d->bwd_ns;
    r.recompute_ns = d->recompute_ns;
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const LayerStat& a, const LayerStat& b) {
    return std::tie(a.step, a.rank, a.module_id) < std::tie(b.step, b.rank, b.module_id);
  });
}

void analyze_gpu_run(RunRecord& record) {
  const auto& events = record.events.events;
  record.gpu = analyze_gpu_timeline(events, record.events.names);
  record.step_ranks = gpu_step_accounting(events, record.events.names);
  record.layers = layer_rows(events, record.modules, {.mac_modules = {}, .device_times = true});
}

std::vector<GpuKernelRow> top_gpu_kernels(const EventSet& set, int rank, size_t n) {
  std::unordered_map<uint32_t, GpuKernelRow> by_name;
  for (const Event& e : set.events) {
    if (!is_gpu_record(e) || e.rank != rank) continue;
    GpuKernelRow& r = by_name[e.name_id];
    if (r.count == 0) {
      r.name = e.name_id < set.names.size() ? set.names[e.name_id] : "?";
      r.work = classify_gpu_record(e.category, r.name);
    }
    ++r.count;
    r.total_ns += e.dur_ns;
    r.max_ns = std::max(r.max_ns, e.dur_ns);
  }
  std::vector<GpuKernelRow> out;
  out.reserve(by_name.size());
  for (auto& [id, r] : by_name) out.push_back(std::move(r));
  std::sort(out.begin(), out.end(), [](const GpuKernelRow& a, const GpuKernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace hybrid::profiler
