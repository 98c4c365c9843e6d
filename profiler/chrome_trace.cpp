#include "profiler/chrome_trace.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "base/atomic_file.h"

namespace hybrid::profiler {

using nlohmann::json;

std::string lane_name(uint16_t lane) {
  if (lane == kLaneCompute) return "compute";
  if (lane == kLaneComm) return "comm";
  if (lane >= kLaneGpuBase) return fmt::format("gpu stream {}", lane - kLaneGpuBase);
  return fmt::format("lane {}", lane);
}

namespace {

// Each rank's tracer epoch relative to the earliest one; empty unless every rank
// with events has a known epoch (then clocks are not aligned).
std::map<int, int64_t> clock_offsets(const std::set<int>& event_ranks,
                                     std::span<const RankInfo> ranks) {
  std::map<int, int64_t> epoch, offset_ns;
  for (const auto& r : ranks) epoch[r.rank] = r.epoch_unix_ns;
  const bool all_known = std::all_of(event_ranks.begin(), event_ranks.end(),
                                     [&](int r) { return epoch.count(r) > 0; });
  if (!all_known || event_ranks.empty()) return offset_ns;
  int64_t base = INT64_MAX;
  for (int r : event_ranks) base = std::min(base, epoch[r]);
  for (int r : event_ranks) offset_ns[r] = epoch[r] - base;
  return offset_ns;
}

json metadata(const char* what, int pid, int tid, const char* key, const json& value) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{key, value}}}};
}

json event_args(const Event& e, const std::unordered_map<int32_t, const ModuleInfo*>& modules) {
  json args = json::object();
  if (e.step >= 0) args["step"] = e.step;
  if (e.module_id >= 0) {
    auto m = modules.find(e.module_id);
    args["module"] = m != modules.end() ? m->second->name : fmt::format("#{}", e.module_id);
    args["module_id"] = e.module_id;
  }
  if (e.bytes) {
    args["bytes"] = e.bytes;
    if (e.dur_ns > 0) args["GB/s"] = double(e.bytes) / double(e.dur_ns);
  }
  if (e.flops) {
    args["flops"] = e.flops;
    if (e.dur_ns > 0) args["TFLOP/s"] = double(e.flops) / double(e.dur_ns) * 1e-3;
  }
  return args;
}

}  // namespace

json chrome_trace(const EventSet& set, std::span<const ModuleInfo> modules,
                  std::span<const RankInfo> ranks, const RunInfo* run) {
  std::unordered_map<int32_t, const ModuleInfo*> module_by_id;
  for (const auto& m : modules) module_by_id[m.id] = &m;
  std::set<int> event_ranks;
  std::set<std::pair<int, int>> lanes;
  for (const Event& e : set.events) {
    event_ranks.insert(e.rank);
    lanes.insert({e.rank, e.lane});
  }
  const std::map<int, int64_t> offset_ns = clock_offsets(event_ranks, ranks);

  json events = json::array();
  for (int r : event_ranks) {
    events.push_back(metadata("process_name", r, 0, "name", fmt::format("rank {}", r)));
    events.push_back(metadata("process_sort_index", r, 0, "sort_index", r));
  }
  for (const auto& [r, lane] : lanes) {
    events.push_back(metadata("thread_name", r, lane, "name", lane_name(uint16_t(lane))));
    events.push_back(metadata("thread_sort_index", r, lane, "sort_index", lane));
  }
  std::vector<const Event*> order;
  order.reserve(set.events.size());
  for (const Event& e : set.events) order.push_back(&e);
  auto shifted = [&](const Event& e) {
    auto it = offset_ns.find(e.rank);
    return e.start_ns + (it == offset_ns.end() ? 0 : it->second);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const Event* a, const Event* b) { return shifted(*a) < shifted(*b); });
  for (const Event* e : order) {
    const std::string name = e->name_id < set.names.size() ? set.names[e->name_id] : "?";
    events.push_back({{"name", name},
                      {"cat", std::string(category_name(e->category))},
                      {"ph", "X"},
                      {"ts", double(shifted(*e)) / 1000.0},
                      {"dur", double(e->dur_ns) / 1000.0},
                      {"pid", int(e->rank)},
                      {"tid", int(e->lane)},
                      {"args", event_args(*e, module_by_id)}});
  }
  json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  json other = {{"generator", kChromeTraceGenerator}, {"clocks_aligned", !offset_ns.empty()}};
  if (run) {
    other["run_id"] = run->id;
    other["run_name"] = run->name;
    other["host"] = run->host;
    other["world_size"] = run->world_size;
  }
  trace["otherData"] = std::move(other);
  return trace;
}

void write_chrome_trace(const std::filesystem::path& path, const json& trace) {
  base::write_file_atomic(path, trace.dump());
}

}  // namespace hybrid::profiler
