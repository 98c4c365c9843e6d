// NcclCommunicator::split: a group is an ncclCommSplit communicator on the
// parent's queue (the same streams, clock and record delivery), so world and
// group collectives keep one issue order on the one communication stream.
// Colours follow the MPI split (every rank joins a group: a negative colour is
// refused, NCCL_SPLIT_NOCOLOR never passed); ranks are ordered by key, ties by
// parent rank (ncclCommSplit's order, MPI_Comm_split's too). The parent rank
// of each member comes from an all-gather over the new group, as the MPI group
// does it, and gives the group its hosts (placement) so that its records carry
// its own link class.
#if HYBRID_HAVE_CUDA
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "engine/comm/collective_args.h"
#include "engine/comm/nccl_communicator_impl.h"

namespace hybrid::engine::comm {

namespace {

// Every member's rank in the parent, in group rank order: one ncclAllGather of
// one int per rank on `stream`, waited for before the scratch is freed.
void gather_parent_ranks(ncclComm_t group, int group_rank, int parent_rank, cudaStream_t stream,
                         std::vector<int>& out) {
  int* dev = nullptr;
  check_cuda(cudaMalloc(&dev, out.size() * sizeof(int)), "cudaMalloc(split members)");
  struct Free {
    int* p;
    ~Free() { cudaFree(p); }
  } free_dev{dev};
  check_cuda(
      cudaMemcpyAsync(dev + group_rank, &parent_rank, sizeof(int), cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync(split member)");
  check_nccl(ncclAllGather(dev + group_rank, dev, 1, ncclInt32, group, stream),
             "ncclAllGather(split members)", group);
  check_cuda(
      cudaMemcpyAsync(out.data(), dev, out.size() * sizeof(int), cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync(split members)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize(split members)");
}

}  // namespace

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  check_color(color);
  ncclComm_t group = nullptr;
  int group_rank = 0, group_size = 0;
  std::vector<int> parent_ranks;
  try {
    queue_->run_and_wait([&](cudaStream_t stream) {
      check_nccl(ncclCommSplit(comm_, color, key, &group, nullptr), "ncclCommSplit", comm_);
      check_nccl(ncclCommUserRank(group, &group_rank), "ncclCommUserRank", group);
      check_nccl(ncclCommCount(group, &group_size), "ncclCommCount", group);
      parent_ranks.resize(size_t(group_size));
      gather_parent_ranks(group, group_rank, rank_, stream, parent_ranks);
    });
    if (parent_ranks.at(size_t(group_rank)) != rank_)
      throw std::logic_error(fmt::format(
          "NCCL communicator: split group rank {} names parent rank {}, but this is rank {}",
          group_rank, parent_ranks[size_t(group_rank)], rank_));
    return std::make_unique<NcclCommunicator>(queue_, group, group_rank, group_size,
                                              placement().of_ranks(parent_ranks), always_grouped_);
  } catch (...) {
    if (group) ncclCommDestroy(group);
    throw;
  }
}

}  // namespace hybrid::engine::comm

#endif
