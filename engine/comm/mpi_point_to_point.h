// The MPI calls behind point-to-point send/recv (pipeline stages), run on the
// communication thread. Bytes travel as MPI_BYTE in pieces of at most `chunk`
// (MPI's counts are int); sender and receiver split the same byte count the
// same way, so the i-th piece sent meets the i-th posted receive (MPI keeps
// messages between a pair on one communicator and tag in order). A 0-byte
// send or recv is still one 0-byte message, so that pairs stay matched.
#pragma once

#include <cstddef>

#include "engine/comm/mpi_collectives.h"

namespace hybrid::engine::comm {

void mpi_send(const MpiContext& c, const void* buf, size_t bytes, int peer);
// Throws std::runtime_error when the peer sent a different number of bytes.
void mpi_recv(const MpiContext& c, void* buf, size_t bytes, int peer);
// Both directions at once (never deadlocks against a peer doing the same the
// other way): one MPI_Sendrecv when each side fits one piece, otherwise every
// piece posted non-blocking and waited for together. A side of 0 bytes is
// skipped: no message.
void mpi_send_recv(const MpiContext& c, const void* send, size_t send_bytes, int dst, void* recv,
                   size_t recv_bytes, int src);

}  // namespace hybrid::engine::comm
