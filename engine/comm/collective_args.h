// Argument checks and message sizes shared by the communicators, so every
// implementation refuses the same inputs with the same words and reports bytes
// as nccl-tests counts them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

size_t sum_counts(const std::vector<size_t>& counts);
// Element offset of rank's part in a concatenation of parts in rank order.
size_t part_offset(const std::vector<size_t>& counts, int rank);

// Throws std::invalid_argument ("<op>: ...") unless there is one count per rank.
void check_counts(std::string_view op, const std::vector<size_t>& counts, int world_size);
// Throws std::invalid_argument ("<op>: <what> is null ...") for a null buffer that
// should hold `bytes` > 0 bytes.
void check_buffer(std::string_view op, std::string_view what, const void* p, size_t bytes);
void check_root(std::string_view op, int root, int world_size);
// split(): every rank joins a group, so a colour must be >= 0 (std::invalid_argument).
void check_color(int color);
// Throws std::invalid_argument ("<op>: <what> <peer> is not a rank ...") unless
// 0 <= peer < world_size.
void check_peer(std::string_view op, std::string_view what, int peer, int world_size);
// A lone send or recv to this rank itself: std::logic_error, since its match
// could only be issued after it on the same rank (send_recv can do both).
void check_not_self(std::string_view op, int peer, int rank);

// all_to_all's buffers: both non-null when there are bytes, and apart.
void check_all_to_all(const void* send, const void* recv, size_t bytes_per_rank, int world_size);

// True when [a, a+an) and [b, b+bn) share a byte (empty ranges share none).
bool ranges_overlap(const void* a, size_t an, const void* b, size_t bn);

// A record with nccl-tests' message size for the collective; times left to fill.
CommRecord make_record(CollectiveKind kind, uint64_t bytes, int world_size, size_t dtype_bytes);
// A send or recv record: the message's bytes, between two ranks, with the peer.
CommRecord make_p2p_record(CollectiveKind kind, uint64_t bytes, int peer);

}  // namespace hybrid::engine::comm
