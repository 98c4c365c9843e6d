// The communication tracer: turns the CommRecords that communicators report on
// completion into bandwidth figures (nccl-tests' algbw/busbw), per-(op, size)
// aggregates, per-step totals with exposed (non-overlapped) time, Tracer events
// on the comm lane, and a DeepSpeed comms-logger style summary.
//
// Threads: on_record() runs on communication threads, record_wait() on the
// compute thread, queries anywhere; one mutex guards the tables. It never waits
// on a collective or a device: it only books what it is told.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "profiler/comm_record.h"

namespace hybrid::profiler {

class Tracer;

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md there): all-reduce
// 2(n−1)/n, all-gather, reduce-scatter and all-to-all (n−1)/n, broadcast 1;
// barrier moves no bytes (0). n < 1 is an error. Message bytes × this factor is
// what each rank sends on a ring (all-to-all: on any algorithm).
double bus_factor(CollectiveKind kind, int world_size);
// bytes / (end − start) in GB/s (1e9 bytes/s); 0 for a zero-length interval.
double algbw_gbps(const CommRecord& r);
double busbw_gbps(const CommRecord& r);  // algbw × bus_factor

// Accepts our names and DeepSpeed's spellings ("all_reduce", "allreduce",
// "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single", ...); throws
// std::invalid_argument naming the input otherwise.
CollectiveKind parse_collective(std::string_view name);

// DeepSpeed's comms_logger block: prof_all profiles every op; otherwise only the
// ops named in prof_ops; verbose prints each profiled collective as it completes.
struct CommTracerOptions {
  bool enabled = true;
  bool verbose = false;
  bool prof_all = true;
  std::vector<std::string> prof_ops;
};

// Aggregate of one (op, message size, link class, communicator group).
struct CommStat {
  CollectiveKind kind = CollectiveKind::all_reduce;
  uint64_t msg_bytes = 0;
  LinkClass link = LinkClass::intra_host;
  std::string group = "world";  // CommRecord::group
  uint64_t count = 0;
  uint64_t total_bytes = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double sum_algbw_gbps = 0;  // per-call values, averaged as DeepSpeed does
  double sum_busbw_gbps = 0;

  double mean_ns() const { return count ? double(total_ns) / double(count) : 0.0; }
  double mean_algbw_gbps() const { return count ? sum_algbw_gbps / double(count) : 0.0; }
  double mean_busbw_gbps() const { return count ? sum_busbw_gbps / double(count) : 0.0; }
};

// Reads or writes of the NVMe swap files of one message size (IoRecords).
struct IoStat {
  IoKind kind = IoKind::nvme_read;
  uint64_t msg_bytes = 0;
  uint64_t count = 0;
  uint64_t total_bytes = 0;
  int64_t total_ns = 0;  // of start..end, summed
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double sum_gbps = 0;  // per-request bandwidths, averaged as for collectives

  double mean_gbps() const { return count ? sum_gbps / double(count) : 0.0; }
};

// One step's communication. comm_ns is the union of the collectives' execution
// intervals (start..end); blocked_ns the union of the compute thread's waits;
// exposed_ns the part of the waits during which communication was in flight
// (waits ∩ collectives), so exposed_ns <= comm_ns always and the wake-up after a
// completion counts as blocked, not as communication. Overlap shows as
// exposed_ns < comm_ns. Every collective counts here, whatever
// the prof_ops filter says, since exposed time is measured against all of them.
struct StepCommTotals {
  int32_t step = -1;
  uint64_t collectives = 0;
  uint64_t bytes = 0;
  int64_t comm_ns = 0;
  int64_t exposed_ns = 0;
  int64_t blocked_ns = 0;
  uint64_t waits = 0;
  // Pipeline bubble: the union of the waits booked as pipeline waits (a stage
  // waiting on its neighbour's activations or gradients); part of blocked_ns.
  int64_t bubble_ns = 0;
  int64_t hidden_ns() const { return comm_ns > exposed_ns ? comm_ns - exposed_ns : 0; }
};

class CommTracer {
 public:
  // tracer (optional) receives one Event per profiled collective on kLaneComm and
  // one per wait on kLaneCompute; clock defaults to the tracer's now_ns(), else to
  // a steady clock started here. The constructing thread is the compute thread.
  explicit CommTracer(CommTracerOptions options = {}, Tracer* tracer = nullptr,
                      std::function<int64_t()> clock = {});
  CommTracer(const CommTracer&) = delete;
  CommTracer& operator=(const CommTracer&) = delete;

  // The time base of every record and wait: give it to the communicator.
  int64_t now_ns() const { return clock_(); }
  const std::function<int64_t()>& clock() const { return clock_; }

  // What Communicator::set_observer expects.
  std::function<void(const CommRecord&)> observer() {
    return [this](const CommRecord& r) { on_record(r); };
  }
  void on_record(const CommRecord& r);

  // The offload path's file I/O (engine/io): booked per (kind, size) and shown
  // next to the collectives, never counted as communication time.
  std::function<void(const IoRecord&)> io_observer() {
    return [this](const IoRecord& r) { on_io(r); };
  }
  void on_io(const IoRecord& r);
  std::vector<IoStat> io_stats() const;  // by kind, then size

  bool profiled(CollectiveKind kind) const { return options_.enabled && profiled_[int(kind)]; }
  const CommTracerOptions& options() const { return options_; }

  // Collectives issued from now on belong to `step` (by their issue time, so one
  // that completes after the next step began still counts for its own step).
  void begin_step(int32_t step);
  int32_t step_at(int64_t t_ns) const;

  // Exposed time: the compute thread blocked on a handle from start to end.
  // Returns false (and books nothing) when called from another thread.
  void set_compute_thread() {
    std::lock_guard lock(mutex_);
    compute_thread_ = std::this_thread::get_id();
  }
  // `pipeline`: a wait on a pipeline transfer, also booked as bubble.
  bool record_wait(int64_t start_ns, int64_t end_ns, int32_t step, bool pipeline = false);
  // Runs wait() and books its interval against the step in effect when it began,
  // also when wait() throws.
  template <class WaitFn>
  void timed_wait(WaitFn&& wait) {
    const int64_t t0 = now_ns();
    try {
      wait();
    } catch (...) {
      record_wait(t0, now_ns(), step_at(t0));
      throw;
    }
    record_wait(t0, now_ns(), step_at(t0));
  }

  // Where verbose lines go (default std::cout); the stream must outlive the tracer.
  void set_verbose_stream(std::ostream* os);
  void set_rank(int rank) { rank_ = rank; }

  std::vector<CommStat> stats() const;  // by op, then group, link class, message size
  std::vector<StepCommTotals> steps() const;
  StepCommTotals step_totals(int32_t step) const;  // zeros when the step saw nothing
  uint64_t rejected_waits() const;
  void reset();

  // DeepSpeed comms-logger style table, one block per op, rows by message size.
  std::string summary() const;

 private:
  struct StepAccum {
    StepCommTotals totals;  // counts and bytes; times are derived from the intervals
    std::vector<std::pair<int64_t, int64_t>> comm, waits, pipeline_waits;
  };
  StepAccum& step_accum(int32_t step);  // mutex held
  StepCommTotals totals_locked(int32_t step) const;
  int32_t step_at_locked(int64_t t_ns) const;

  CommTracerOptions options_;
  bool profiled_[kCollectiveKindCount] = {};
  Tracer* tracer_;
  std::function<int64_t()> clock_;
  uint32_t name_ids_[kCollectiveKindCount] = {};
  uint32_t wait_name_id_ = 0;
  std::thread::id compute_thread_;
  int rank_ = 0;

  mutable std::mutex mutex_;
  std::ostream* verbose_;
  std::map<std::tuple<int, std::string, int, uint64_t>, CommStat>
      stats_;  // (kind, group, link, bytes)
  std::map<std::pair<int, uint64_t>, IoStat> io_stats_;
  std::map<int32_t, StepAccum> steps_;
  std::vector<std::pair<int64_t, int32_t>> step_starts_;  // (time, step), in time order
  uint64_t rejected_waits_ = 0;
};

}  // namespace hybrid::profiler
