#include "profiler/comm_tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <stdexcept>

#include "profiler/intervals.h"
#include "profiler/tracer.h"

namespace hybrid::profiler {

namespace {

std::string format_size(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", v, units[u]);
}

std::string format_latency(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

std::string format_bw(double gbps) { return fmt::format("{:.3f} GB/s", gbps); }

// A map's values in key order.
template <class Map>
std::vector<typename Map::mapped_type> values_of(const Map& m) {
  std::vector<typename Map::mapped_type> out;
  out.reserve(m.size());
  for (const auto& [key, v] : m) out.push_back(v);
  return out;
}

// One call of `bytes` taking `dur` ns added to a collective's or an I/O
// kind's statistics (the first call names them).
template <class Stat, class Kind>
void add_call(Stat& s, Kind kind, uint64_t bytes, int64_t dur) {
  if (s.count == 0) {
    s.kind = kind;
    s.msg_bytes = bytes;
    s.min_ns = dur;
    s.max_ns = dur;
  }
  s.count += 1;
  s.total_bytes += bytes;
  s.total_ns += dur;
  s.min_ns = std::min(s.min_ns, dur);
  s.max_ns = std::max(s.max_ns, dur);
}

}  // namespace

double bus_factor(CollectiveKind kind, int world_size) {
  if (world_size < 1)
    throw std::invalid_argument(
        fmt::format("bus_factor: world size must be >= 1, got {}", world_size));
  const double n = world_size;
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_gather:
    case CollectiveKind::all_to_all:  // each rank sends n − 1 of its n blocks
      return (n - 1.0) / n;
    case CollectiveKind::broadcast:
    case CollectiveKind::send:  // one link, one direction: busbw = algbw
    case CollectiveKind::recv:
      return 1.0;
    case CollectiveKind::barrier:
      return 0.0;
  }
  return 0.0;
}

double algbw_gbps(const CommRecord& r) {
  const int64_t dur = r.end_ns - r.start_ns;
  if (dur <= 0) return 0.0;
  return double(r.bytes) / double(dur);  // bytes per ns == GB/s
}

double busbw_gbps(const CommRecord& r) { return algbw_gbps(r) * bus_factor(r.kind, r.world_size); }

CollectiveKind parse_collective(std::string_view name) {
  for (int k = 0; k < kCollectiveKindCount; ++k)
    if (collective_name(CollectiveKind(k)) == name) return CollectiveKind(k);
  // torch.distributed / DeepSpeed spellings of the same collectives.
  if (name == "allreduce" || name == "inference_all_reduce") return CollectiveKind::all_reduce;
  if (name == "allgather" || name == "all_gather_into_tensor" || name == "all_gather_base" ||
      name == "allgather_fn")
    return CollectiveKind::all_gather;
  if (name == "reducescatter" || name == "reduce_scatter_tensor" || name == "reduce_scatter_base" ||
      name == "reduce_scatter_fn")
    return CollectiveKind::reduce_scatter;
  if (name == "bcast") return CollectiveKind::broadcast;
  if (name == "isend") return CollectiveKind::send;
  if (name == "irecv") return CollectiveKind::recv;
  if (name == "all_to_all_single" || name == "alltoall") return CollectiveKind::all_to_all;
  throw std::invalid_argument(fmt::format(
      "comms_logger.prof_ops: unknown collective '{}' (expected all_reduce, reduce_scatter, "
      "all_gather, broadcast, barrier, send, recv or all_to_all)",
      name));
}

CommTracer::CommTracer(CommTracerOptions options, Tracer* tracer, std::function<int64_t()> clock)
    : options_(std::move(options)),
      tracer_(tracer),
      clock_(std::move(clock)),
      compute_thread_(std::this_thread::get_id()),
      verbose_(&std::cout) {
  for (int k = 0; k < kCollectiveKindCount; ++k) profiled_[k] = options_.prof_all;
  if (!options_.prof_all)
    for (const auto& op : options_.prof_ops) profiled_[int(parse_collective(op))] = true;
  if (!clock_) {
    if (tracer_) {
      clock_ = [t = tracer_] { return t->now_ns(); };
    } else {
      const auto epoch = std::chrono::steady_clock::now();
      clock_ = [epoch] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - epoch)
            .count();
      };
    }
  }
  if (tracer_) {
    for (int k = 0; k < kCollectiveKindCount; ++k)
      name_ids_[k] = tracer_->intern(collective_name(CollectiveKind(k)));
    wait_name_id_ = tracer_->intern("comm_wait");
    rank_ = tracer_->rank();
  }
}

void CommTracer::set_verbose_stream(std::ostream* os) {
  std::lock_guard lock(mutex_);
  verbose_ = os;
}

CommTracer::StepAccum& CommTracer::step_accum(int32_t step) {
  auto [it, inserted] = steps_.try_emplace(step);
  if (inserted) it->second.totals.step = step;
  return it->second;
}

int32_t CommTracer::step_at_locked(int64_t t_ns) const {
  auto it = std::upper_bound(step_starts_.begin(), step_starts_.end(), t_ns,
                             [](int64_t t, const auto& s) { return t < s.first; });
  return it == step_starts_.begin() ? -1 : std::prev(it)->second;
}

int32_t CommTracer::step_at(int64_t t_ns) const {
  std::lock_guard lock(mutex_);
  return step_at_locked(t_ns);
}

void CommTracer::begin_step(int32_t step) {
  const int64_t t = now_ns();
  std::lock_guard lock(mutex_);
  // A clock that went backwards would break the ordered search: clamp.
  const int64_t at = step_starts_.empty() ? t : std::max(t, step_starts_.back().first);
  step_starts_.emplace_back(at, step);
}

void CommTracer::on_record(const CommRecord& r) {
  if (!options_.enabled) return;
  const bool prof = profiled(r.kind);
  const double alg = algbw_gbps(r);
  const double bus = busbw_gbps(r);
  const int64_t dur = std::max<int64_t>(0, r.end_ns - r.start_ns);
  int32_t step;
  {
    std::lock_guard lock(mutex_);
    step = step_at_locked(r.issue_ns);
    StepAccum& acc = step_accum(step);
    acc.totals.collectives += 1;
    acc.totals.bytes += r.bytes;
    acc.comm.emplace_back(r.start_ns, r.end_ns);
    if (prof) {
      CommStat& s = stats_[{int(r.kind), std::string(r.group), int(r.link), r.bytes}];
      if (s.count == 0) {
        s.link = r.link;
        s.group = std::string(r.group);
      }
      add_call(s, r.kind, r.bytes, dur);
      s.sum_algbw_gbps += alg;
      s.sum_busbw_gbps += bus;
      if (options_.verbose && verbose_) {
        *verbose_ << fmt::format(
            "[rank {}] comm op: {} | time: {} | msg size: {} | algbw: {} | busbw: {}\n", rank_,
            collective_name(r.kind), format_latency(double(dur)), format_size(r.bytes),
            format_bw(alg), format_bw(bus));
      }
    }
  }
  if (prof && tracer_ && tracer_->enabled()) {
    Event e;
    e.start_ns = r.start_ns;
    e.dur_ns = dur;
    e.bytes = r.bytes;
    e.name_id = name_ids_[int(r.kind)];
    e.step = step;
    e.lane = kLaneComm;
    e.category = Category::comm;
    tracer_->record(e);
  }
}

void CommTracer::on_io(const IoRecord& r) {
  if (!options_.enabled) return;
  const int64_t dur = std::max<int64_t>(0, r.end_ns - r.start_ns);
  const double gbps = dur > 0 ? double(r.bytes) / double(dur) : 0.0;
  std::lock_guard lock(mutex_);
  IoStat& s = io_stats_[{int(r.kind), r.bytes}];
  add_call(s, r.kind, r.bytes, dur);
  s.sum_gbps += gbps;
  if (options_.verbose && verbose_)
    *verbose_ << fmt::format("[rank {}] io op: {} | time: {} | size: {} | bandwidth: {}\n", rank_,
                             io_name(r.kind), format_latency(double(dur)), format_size(r.bytes),
                             format_bw(gbps));
}

std::vector<IoStat> CommTracer::io_stats() const {
  std::lock_guard lock(mutex_);
  return values_of(io_stats_);
}

bool CommTracer::record_wait(int64_t start_ns, int64_t end_ns, int32_t step, bool pipeline) {
  std::lock_guard lock(mutex_);
  if (std::this_thread::get_id() != compute_thread_) {
    ++rejected_waits_;
    return false;
  }
  if (!options_.enabled) return true;
  StepAccum& acc = step_accum(step);
  acc.totals.waits += 1;
  acc.waits.emplace_back(start_ns, end_ns);
  if (pipeline) acc.pipeline_waits.emplace_back(start_ns, end_ns);
  if (tracer_ && tracer_->enabled()) {
    Event e;
    e.start_ns = start_ns;
    e.dur_ns = std::max<int64_t>(0, end_ns - start_ns);
    e.name_id = wait_name_id_;
    e.step = step;
    e.lane = kLaneCompute;
    e.category = Category::comm;
    tracer_->record(e);
  }
  return true;
}

std::vector<CommStat> CommTracer::stats() const {
  std::lock_guard lock(mutex_);
  return values_of(stats_);
}

std::vector<StepCommTotals> CommTracer::steps() const {
  std::lock_guard lock(mutex_);
  std::vector<StepCommTotals> out;
  out.reserve(steps_.size());
  for (const auto& [step, acc] : steps_) out.push_back(totals_locked(step));
  return out;
}

StepCommTotals CommTracer::step_totals(int32_t step) const {
  std::lock_guard lock(mutex_);
  return totals_locked(step);
}

StepCommTotals CommTracer::totals_locked(int32_t step) const {
  StepCommTotals t;
  t.step = step;
  auto it = steps_.find(step);
  if (it == steps_.end()) return t;
  t = it->second.totals;
  const Intervals comm = merged(it->second.comm), waits = merged(it->second.waits);
  t.comm_ns = total_length(comm);
  t.blocked_ns = total_length(waits);
  t.bubble_ns = total_length(merged(it->second.pipeline_waits));
  // A wait may cover a collective issued in a neighbouring step (one issued at
  // the end of a step and waited for at the start of the next).
  Intervals nearby = it->second.comm;
  for (int32_t n : {step - 1, step + 1})
    if (auto o = steps_.find(n); o != steps_.end())
      nearby.insert(nearby.end(), o->second.comm.begin(), o->second.comm.end());
  t.exposed_ns = std::min(t.comm_ns, overlap(waits, merged(std::move(nearby))));
  return t;
}

uint64_t CommTracer::rejected_waits() const {
  std::lock_guard lock(mutex_);
  return rejected_waits_;
}

void CommTracer::reset() {
  std::lock_guard lock(mutex_);
  stats_.clear();
  io_stats_.clear();
  steps_.clear();
  step_starts_.clear();
  rejected_waits_ = 0;
}

std::string CommTracer::summary() const {
  const auto rows = stats();
  std::string out = fmt::format("{:<16}{:>14}{:>9}{:>16}{:>14}{:>14}{:>14}{:>17}{:>17}\n",
                                "Comm. Op", "Message Size", "Count", "Total Latency", "Avg Latency",
                                "Min Latency", "Max Latency", "algbw (avg)", "busbw (avg)");
  // One heading per op as DeepSpeed prints it; a communicator group other than
  // the world ("all_reduce [dp]") and collectives that crossed hosts under
  // headings of their own.
  std::string last_heading;
  for (const auto& s : rows) {
    std::string heading(collective_name(s.kind));
    if (s.group != "world") heading += fmt::format(" [{}]", s.group);
    if (s.link == LinkClass::inter_host) heading += fmt::format(" ({})", link_name(s.link));
    if (heading != last_heading) {
      out += heading + "\n";
      last_heading = std::move(heading);
    }
    out += fmt::format("{:<16}{:>14}{:>9}{:>16}{:>14}{:>14}{:>14}{:>17}{:>17}\n", "",
                       format_size(s.msg_bytes), s.count, format_latency(double(s.total_ns)),
                       format_latency(s.mean_ns()), format_latency(double(s.min_ns)),
                       format_latency(double(s.max_ns)), format_bw(s.mean_algbw_gbps()),
                       format_bw(s.mean_busbw_gbps()));
  }
  // The offload path's file I/O, in the same columns (no bus factor: one rank, one file).
  int last_io = -1;
  for (const auto& s : io_stats()) {
    if (int(s.kind) != last_io) {
      out += fmt::format("{}\n", io_name(s.kind));
      last_io = int(s.kind);
    }
    out += fmt::format("{:<16}{:>14}{:>9}{:>16}{:>14}{:>14}{:>14}{:>17}{:>17}\n", "",
                       format_size(s.msg_bytes), s.count, format_latency(double(s.total_ns)),
                       format_latency(s.count ? double(s.total_ns) / double(s.count) : 0.0),
                       format_latency(double(s.min_ns)), format_latency(double(s.max_ns)),
                       format_bw(s.mean_gbps()), "-");
  }
  return out;
}

}  // namespace hybrid::profiler
