#include "engine/comm/mpi_point_to_point.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace hybrid::engine::comm {

namespace {

// Point-to-point messages have their own tag; collectives use none.
constexpr int kTag = 0x5052;

// Pieces of [0, bytes) of at most chunk bytes; one empty piece for 0 bytes.
size_t pieces(size_t bytes, size_t chunk) { return bytes == 0 ? 1 : (bytes + chunk - 1) / chunk; }
int piece_size(size_t bytes, size_t chunk, size_t i) {
  return int(std::min(chunk, bytes - std::min(bytes, i * chunk)));
}

void check_received(const MPI_Status& st, int expected, int peer) {
  int got = 0;
  check_mpi(MPI_Get_count(&st, MPI_BYTE, &got), "MPI_Get_count");
  if (got != expected)
    throw std::runtime_error(fmt::format(
        "recv: rank {} sent a piece of {} bytes where {} were expected (the byte counts of a send "
        "and its recv must match)",
        peer, got, expected));
}

}  // namespace

void mpi_send(const MpiContext& c, const void* buf, size_t bytes, int peer) {
  const auto* p = static_cast<const std::byte*>(buf);
  for (size_t i = 0, n = pieces(bytes, c.chunk); i < n; ++i)
    check_mpi(
        MPI_Send(p + i * c.chunk, piece_size(bytes, c.chunk, i), MPI_BYTE, peer, kTag, c.comm),
        "MPI_Send");
}

void mpi_recv(const MpiContext& c, void* buf, size_t bytes, int peer) {
  auto* p = static_cast<std::byte*>(buf);
  for (size_t i = 0, n = pieces(bytes, c.chunk); i < n; ++i) {
    MPI_Status st;
    const int want = piece_size(bytes, c.chunk, i);
    check_mpi(MPI_Recv(p + i * c.chunk, want, MPI_BYTE, peer, kTag, c.comm, &st), "MPI_Recv");
    check_received(st, want, peer);
  }
}

void mpi_send_recv(const MpiContext& c, const void* send, size_t send_bytes, int dst, void* recv,
                   size_t recv_bytes, int src) {
  if (send_bytes == 0 && recv_bytes == 0) return;
  if (send_bytes == 0) return mpi_recv(c, recv, recv_bytes, src);
  if (recv_bytes == 0) return mpi_send(c, send, send_bytes, dst);
  if (send_bytes <= c.chunk && recv_bytes <= c.chunk) {
    MPI_Status st;
    check_mpi(MPI_Sendrecv(send, int(send_bytes), MPI_BYTE, dst, kTag, recv, int(recv_bytes),
                           MPI_BYTE, src, kTag, c.comm, &st),
              "MPI_Sendrecv");
    check_received(st, int(recv_bytes), src);
    return;
  }
  // Receives first, so every incoming piece has a place before any send waits on its peer.
  const size_t nr = pieces(recv_bytes, c.chunk), ns = pieces(send_bytes, c.chunk);
  std::vector<MPI_Request> reqs(nr + ns, MPI_REQUEST_NULL);
  std::vector<MPI_Status> st(nr + ns);
  for (size_t i = 0; i < nr; ++i)
    check_mpi(MPI_Irecv(static_cast<std::byte*>(recv) + i * c.chunk,
                        piece_size(recv_bytes, c.chunk, i), MPI_BYTE, src, kTag, c.comm, &reqs[i]),
              "MPI_Irecv");
  for (size_t i = 0; i < ns; ++i)
    check_mpi(
        MPI_Isend(static_cast<const std::byte*>(send) + i * c.chunk,
                  piece_size(send_bytes, c.chunk, i), MPI_BYTE, dst, kTag, c.comm, &reqs[nr + i]),
        "MPI_Isend");
  check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), st.data()), "MPI_Waitall");
  for (size_t i = 0; i < nr; ++i) check_received(st[i], piece_size(recv_bytes, c.chunk, i), src);
}

}  // namespace hybrid::engine::comm
