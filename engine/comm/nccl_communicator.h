// NCCL communicator for GPU ranks (one GPU per rank), bootstrapped over MPI.
//
// Every collective runs on the communication stream, ordered after the work
// already queued on the compute stream (event recorded on compute, waited on by
// the comm stream), so the engine can overlap gradient reduction with backward.
// The returned handle's wait() makes the compute stream wait for the collective
// (an event recorded after it): it does not block the host, and everything the
// engine queues afterwards (kernels, copies to the host, frees through the
// stream-ordered caching allocator) sees the result. barrier() blocks the host.
//
// Uneven reduce-scatter/all-gather counts (NCCL needs equal ones) become one
// ncclGroup of per-rank ncclReduce/ncclBroadcast calls; equal counts use
// ncclReduceScatter/ncclAllGather.
//
// Tracing: CommRecords get their times from CUDA events on the comm stream,
// converted to the caller's clock through an anchor event whose host time is
// known (re-anchored when the stream is idle), and are delivered when the
// events are found complete (polled at the next issue, wait() or ready(), or
// when a communicator is destroyed) — no synchronisation is added for tracing.
//
// Groups (split(color, key), 3D parallelism's tp/dp/pp/tied groups): one
// ncclCommSplit communicator each (NCCL >= 2.18), sharing the parent's
// streams, clock and record delivery (engine/comm/nccl_queue.h), so the world
// and all its groups issue in one order on the one comm stream. A group's
// peers (send/recv/send_recv, roots) are group ranks; its records carry its own
// size, label and the link class of its members' hosts (the parent's placement
// of its members, gathered at the split). Colours are checked as the MPI split
// checks them: every rank joins a group (colour >= 0). The split is collective
// over the parent and waits on the host; destroy groups before their parent.
//
// The header compiles in every build; in a CPU-only build the factory throws.
// Handles must not outlive their communicator. What has run on a GPU and what
// has not: docs/parallelism.md ("On the GPU").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

struct NcclOptions {
  int device = 0;
  // cudaStream_t values; the compute stream's queued work precedes each collective.
  // A null comm_stream makes the communicator create its own.
  void* compute_stream = nullptr;
  void* comm_stream = nullptr;
  std::function<int64_t()> clock;  // ns for CommRecord times (the tracer's); default steady clock
  // Rank, world size and a broadcast of rank 0's bytes to every rank, for the
  // ncclUniqueId. Unset: MPI_COMM_WORLD (MPI initialised here if a launcher
  // started several ranks or MPI is up already; otherwise world size 1, no MPI).
  int rank = -1;
  int world_size = -1;
  std::function<void(void* data, size_t bytes)> bootstrap_broadcast;
  // The host of each rank (the host communicator's); unset: one host.
  Placement placement;
  // Tests: use the grouped per-rank path even for equal counts.
  bool always_grouped = false;
};

// Throws std::runtime_error naming the failing call (CUDA, NCCL or MPI), or
// saying that this build has no CUDA support.
std::unique_ptr<Communicator> make_nccl_communicator(NcclOptions options);

// Whether this build can make an NCCL communicator.
bool nccl_available_in_build();

}  // namespace hybrid::engine::comm
