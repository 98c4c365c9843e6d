#include "engine/parallel/topology.h"

#include <fmt/format.h>

#include <stdexcept>

namespace hybrid::engine {

const char* axis_name(ParallelAxis a) {
  switch (a) {
    case ParallelAxis::tp:
      return "tp";
    case ParallelAxis::dp:
      return "dp";
    case ParallelAxis::pp:
      return "pp";
  }
  return "?";
}

Topology::Topology(int world, int tp, int pp) : world_(world), tp_(tp), pp_(pp), dp_(0) {
  if (world < 1) throw std::invalid_argument(fmt::format("topology: world size {} < 1", world));
  if (tp < 1)
    throw std::invalid_argument(fmt::format("tensor_model_parallel_size must be >= 1, got {}", tp));
  if (pp < 1) throw std::invalid_argument(fmt::format("pipeline.stages must be >= 1, got {}", pp));
  if (world % (tp * pp) != 0)
    throw std::invalid_argument(fmt::format(
        "tensor_model_parallel_size ({}) x pipeline.stages ({}) = {} must divide the {} ranks", tp,
        pp, tp * pp, world));
  dp_ = world / (tp * pp);
}

int Topology::size(ParallelAxis a) const {
  return a == ParallelAxis::tp ? tp_ : a == ParallelAxis::dp ? dp_ : pp_;
}

TopologyCoords Topology::coords(int rank) const {
  if (rank < 0 || rank >= world_)
    throw std::out_of_range(fmt::format("topology: rank {} outside 0..{}", rank, world_ - 1));
  return {rank / (dp_ * tp_), (rank / tp_) % dp_, rank % tp_};
}

int Topology::rank_of(const TopologyCoords& c) const {
  if (c.pp < 0 || c.pp >= pp_ || c.dp < 0 || c.dp >= dp_ || c.tp < 0 || c.tp >= tp_)
    throw std::out_of_range(fmt::format("topology: coordinates pp {} dp {} tp {} outside {}", c.pp,
                                        c.dp, c.tp, describe()));
  return (c.pp * dp_ + c.dp) * tp_ + c.tp;
}

std::vector<int> Topology::group(ParallelAxis axis, int rank) const {
  TopologyCoords c = coords(rank);
  std::vector<int> members;
  for (int i = 0; i < size(axis); ++i) {
    (axis == ParallelAxis::tp ? c.tp : axis == ParallelAxis::dp ? c.dp : c.pp) = i;
    members.push_back(rank_of(c));
  }
  return members;
}

int Topology::group_index(ParallelAxis axis, int rank) const {
  const TopologyCoords c = coords(rank);
  switch (axis) {
    case ParallelAxis::tp:
      return c.pp * dp_ + c.dp;
    case ParallelAxis::dp:
      return c.pp * tp_ + c.tp;
    case ParallelAxis::pp:
      return c.dp * tp_ + c.tp;
  }
  return 0;
}

SplitArgs Topology::split_args(ParallelAxis axis, int rank) const {
  const TopologyCoords c = coords(rank);
  const int index = axis == ParallelAxis::tp ? c.tp : axis == ParallelAxis::dp ? c.dp : c.pp;
  return {group_index(axis, rank), index};
}

SplitArgs Topology::tied_split_args(int rank) const {
  const TopologyCoords c = coords(rank);
  const bool ends = c.pp == 0 || c.pp == pp_ - 1;
  const int pipelines = dp_ * tp_;
  return {ends ? group_index(ParallelAxis::pp, rank) : pipelines + rank, c.pp};
}

std::string Topology::describe() const {
  return fmt::format("world {} = pp {} x dp {} x tp {}", world_, pp_, dp_, tp_);
}

comm::Communicator& GroupCommunicators::of(ParallelAxis a) const {
  return a == ParallelAxis::tp ? *tp : a == ParallelAxis::dp ? *dp : *pp;
}

GroupCommunicators make_group_communicators(comm::Communicator& world, const Topology& topo) {
  if (world.world_size() != topo.world())
    throw std::invalid_argument(fmt::format("topology: {} but the communicator has {} ranks",
                                            topo.describe(), world.world_size()));
  auto split = [&](ParallelAxis a) {
    const SplitArgs s = topo.split_args(a, world.rank());
    return world.split(s.color, s.key);
  };
  GroupCommunicators g;
  g.tp = split(ParallelAxis::tp);
  g.dp = split(ParallelAxis::dp);
  g.pp = split(ParallelAxis::pp);
  return g;
}

}  // namespace hybrid::engine
