#include "engine/comm/mpi_collectives.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/comm/collective_args.h"

namespace hybrid::engine::comm {

namespace {

std::byte* at(void* p, size_t elements, size_t elem_size) {
  return static_cast<std::byte*>(p) + elements * elem_size;
}
const std::byte* at(const void* p, size_t elements, size_t elem_size) {
  return static_cast<const std::byte*>(p) + elements * elem_size;
}

// Calls fn(offset, n) over [0, count) in pieces of at most `chunk`; once with
// n = 0 for an empty range, so that every rank still takes part.
template <class Fn>
void for_each_piece(size_t count, size_t chunk, Fn&& fn) {
  size_t off = 0;
  do {
    const size_t n = std::min(chunk, count - off);
    fn(off, int(n));
    off += n;
  } while (off < count);
}

}  // namespace

void mpi_all_reduce(const MpiContext& c, void* buf, size_t count, DType dt, ReduceOp op) {
  const MPI_Datatype type = c.types->datatype(dt);
  const MPI_Op mop = c.types->op(dt, op);
  const size_t es = dtype_size(dt);
  for_each_piece(count, c.chunk, [&](size_t off, int n) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, at(buf, off, es), n, type, mop, c.comm), "MPI_Allreduce");
  });
}

void mpi_reduce_scatter(const MpiContext& c, const void* send, void* recv,
                        const std::vector<size_t>& counts, DType dt, ReduceOp op) {
  const MPI_Datatype type = c.types->datatype(dt);
  const MPI_Op mop = c.types->op(dt, op);
  const size_t es = dtype_size(dt);
  const size_t total = sum_counts(counts);
  const size_t mine = counts[size_t(c.rank)];

  // MPI forbids aliasing send and recv outside MPI_IN_PLACE (whose layout differs).
  std::vector<std::byte> scratch;
  void* out = recv;
  if (ranges_overlap(send, total * es, recv, mine * es)) {
    scratch.resize(mine * es);
    out = scratch.data();
  }

  if (total <= c.chunk) {
    std::vector<int> recvcounts(counts.begin(), counts.end());
    check_mpi(MPI_Reduce_scatter(send, out, recvcounts.data(), type, mop, c.comm),
              "MPI_Reduce_scatter");
  } else {
    size_t offset = 0;
    for (int r = 0; r < c.world_size; ++r) {
      const size_t count = counts[size_t(r)];
      for_each_piece(count, c.chunk, [&](size_t off, int n) {
        check_mpi(MPI_Reduce(at(send, offset + off, es), r == c.rank ? at(out, off, es) : nullptr,
                             n, type, mop, r, c.comm),
                  "MPI_Reduce (split reduce-scatter)");
      });
      offset += count;
    }
  }
  if (out != recv && mine) std::memcpy(recv, out, mine * es);
}

void mpi_all_gather(const MpiContext& c, const void* send, void* recv,
                    const std::vector<size_t>& counts, DType dt) {
  const MPI_Datatype type = c.types->datatype(dt);
  const size_t es = dtype_size(dt);
  const size_t total = sum_counts(counts);
  const size_t mine = counts[size_t(c.rank)];
  void* slot = at(recv, part_offset(counts, c.rank), es);
  const bool in_place = send == slot;

  if (total <= c.chunk) {
    std::vector<int> recvcounts(counts.begin(), counts.end()), displs(counts.size());
    for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + recvcounts[r - 1];
    check_mpi(MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, int(mine), type, recv,
                             recvcounts.data(), displs.data(), type, c.comm),
              "MPI_Allgatherv");
    return;
  }
  if (!in_place && mine) std::memcpy(slot, send, mine * es);
  size_t offset = 0;
  for (int r = 0; r < c.world_size; ++r) {
    const size_t count = counts[size_t(r)];
    for_each_piece(count, c.chunk, [&](size_t off, int n) {
      check_mpi(MPI_Bcast(at(recv, offset + off, es), n, type, r, c.comm),
                "MPI_Bcast (split all-gather)");
    });
    offset += count;
  }
}

void mpi_broadcast(const MpiContext& c, void* buf, size_t bytes, int root) {
  for_each_piece(bytes, c.chunk, [&](size_t off, int n) {
    check_mpi(MPI_Bcast(at(buf, off, 1), n, MPI_BYTE, root, c.comm), "MPI_Bcast");
  });
}

void mpi_barrier(const MpiContext& c) { check_mpi(MPI_Barrier(c.comm), "MPI_Barrier"); }

void mpi_all_to_all(const MpiContext& c, const void* send, void* recv, size_t bytes_per_rank) {
  if (bytes_per_rank <= c.chunk) {
    check_mpi(MPI_Alltoall(send, int(bytes_per_rank), MPI_BYTE, recv, int(bytes_per_rank), MPI_BYTE,
                           c.comm),
              "MPI_Alltoall");
    return;
  }
  // Piece [off, off + n) of every block, gathered into contiguous blocks of n.
  const size_t world = size_t(c.world_size);
  std::vector<std::byte> out(world * c.chunk), in(world * c.chunk);
  for_each_piece(bytes_per_rank, c.chunk, [&](size_t off, int n) {
    for (size_t r = 0; r < world; ++r)
      std::memcpy(at(out.data(), r * size_t(n), 1), at(send, r * bytes_per_rank + off, 1),
                  size_t(n));
    check_mpi(MPI_Alltoall(out.data(), n, MPI_BYTE, in.data(), n, MPI_BYTE, c.comm),
              "MPI_Alltoall (split all-to-all)");
    for (size_t r = 0; r < world; ++r)
      std::memcpy(at(recv, r * bytes_per_rank + off, 1), at(in.data(), r * size_t(n), 1),
                  size_t(n));
  });
}

}  // namespace hybrid::engine::comm
