// One collective as the communication tracer sees it. Communicators (engine/comm)
// produce these on completion; the profiler turns them into events and stats.
// IoRecord is its sibling for the offload path's file I/O (engine/io), booked
// by the same tracer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hybrid::profiler {

enum class CollectiveKind : uint8_t {
  all_reduce = 0,
  reduce_scatter,
  all_gather,
  broadcast,
  barrier,
  send,  // point-to-point (pipeline stages): one record per direction
  recv,
  all_to_all  // block j of each rank's send buffer to rank j (compressed all-reduce)
};
// Appended kinds keep the earlier ones' values; the store keeps names, not values.
constexpr int kCollectiveKindCount = 8;
std::string_view collective_name(CollectiveKind k);

// What a collective's ranks are joined by: all on one host (shared memory), or
// spread over hosts (the network, usually the slower link).
enum class LinkClass : uint8_t { intra_host = 0, inter_host };
constexpr int kLinkClassCount = 2;
std::string_view link_name(LinkClass l);  // "intra_host", "inter_host"
// Throws std::invalid_argument naming the input for anything but link_name()s.
LinkClass parse_link(std::string_view name);

struct CommRecord {
  CollectiveKind kind = CollectiveKind::all_reduce;
  uint64_t bytes = 0;    // message size as nccl-tests defines it: all-reduce and broadcast
                         // the buffer; all-gather the gathered output; reduce-scatter the
                         // input (world × shard); all-to-all the send buffer (world × block)
  int world_size = 1;    // ranks of the communicator (send/recv: 2, the pair)
  int64_t issue_ns = 0;  // compute thread issued it (tracer clock)
  int64_t start_ns = 0;  // communication thread started it
  int64_t end_ns = 0;    // completed
  uint8_t dtype_bytes = 4;
  LinkClass link = LinkClass::intra_host;  // stamped by the communicator
  int peer = -1;  // send/recv: the other rank (of the issuing communicator); -1 otherwise
  // The issuing communicator's group label (stamped by it); views the
  // communicator's string, so an observer copies it to keep it.
  std::string_view group = "world";
};

// One read or write of this rank's NVMe swap files (ZeRO-Infinity offload):
// not a collective, so it never counts as communication time, but its
// bandwidth is reported next to the collectives'.
enum class IoKind : uint8_t { nvme_read = 0, nvme_write };
constexpr int kIoKindCount = 2;
std::string_view io_name(IoKind k);  // "nvme_read", "nvme_write"

struct IoRecord {
  IoKind kind = IoKind::nvme_read;
  uint64_t bytes = 0;
  int64_t issue_ns = 0;  // the caller submitted it (tracer clock)
  int64_t start_ns = 0;  // an I/O thread started its first block
  int64_t end_ns = 0;    // its last block completed
};

}  // namespace hybrid::profiler
