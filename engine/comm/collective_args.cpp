#include "engine/comm/collective_args.h"

#include <fmt/format.h>

#include <cstdint>
#include <numeric>
#include <stdexcept>

namespace hybrid::engine::comm {

size_t sum_counts(const std::vector<size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), size_t{0});
}

size_t part_offset(const std::vector<size_t>& counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
}

void check_counts(std::string_view op, const std::vector<size_t>& counts, int world_size) {
  if (counts.size() != size_t(world_size))
    throw std::invalid_argument(fmt::format("{}: counts has {} entries, expected one per rank ({})",
                                            op, counts.size(), world_size));
}

void check_buffer(std::string_view op, std::string_view what, const void* p, size_t bytes) {
  if (!p && bytes > 0)
    throw std::invalid_argument(
        fmt::format("{}: {} is null but must hold {} bytes", op, what, bytes));
}

void check_root(std::string_view op, int root, int world_size) {
  if (root < 0 || root >= world_size)
    throw std::invalid_argument(
        fmt::format("{}: root {} is not a rank (world size {})", op, root, world_size));
}

void check_peer(std::string_view op, std::string_view what, int peer, int world_size) {
  if (peer < 0 || peer >= world_size)
    throw std::invalid_argument(fmt::format(
        "{}: {} {} is not a rank of this communicator (ranks 0..{}; a split group's peers are "
        "group ranks)",
        op, what, peer, world_size - 1));
}

void check_not_self(std::string_view op, int peer, int rank) {
  if (peer == rank)
    throw std::logic_error(fmt::format(
        "{}: peer {} is this rank; a lone {} to itself cannot complete (its match would be issued "
        "after it): use send_recv with dst == src == {}",
        op, peer, op, rank));
}

void check_all_to_all(const void* send, const void* recv, size_t bytes_per_rank, int world_size) {
  const size_t total = bytes_per_rank * size_t(world_size);
  check_buffer("all_to_all", "send", send, total);
  check_buffer("all_to_all", "recv", recv, total);
  if (ranges_overlap(send, total, recv, total))
    throw std::invalid_argument(fmt::format(
        "all_to_all: send and recv overlap ({} bytes each); they must be separate buffers", total));
}

bool ranges_overlap(const void* a, size_t an, const void* b, size_t bn) {
  if (an == 0 || bn == 0) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bn && pb < pa + an;
}

CommRecord make_record(CollectiveKind kind, uint64_t bytes, int world_size, size_t dtype_bytes) {
  CommRecord r;
  r.kind = kind;
  r.bytes = bytes;
  r.world_size = world_size;
  r.dtype_bytes = uint8_t(dtype_bytes);
  return r;
}

CommRecord make_p2p_record(CollectiveKind kind, uint64_t bytes, int peer) {
  CommRecord r = make_record(kind, bytes, 2, 1);
  r.peer = peer;
  return r;
}

void check_color(int color) {
  if (color < 0)
    throw std::invalid_argument(
        fmt::format("split: color must be >= 0 (every rank joins a group), got {}", color));
}

}  // namespace hybrid::engine::comm
