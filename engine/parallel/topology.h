// 3D parallelism's process topology: world = pp × dp × tp ranks, tensor
// parallel innermost (neighbouring ranks, so a tp group shares a host), then
// data parallel, then pipeline stages outermost (DeepSpeed's and Megatron's
// order):
//
//   rank = (pp_index · dp + dp_index) · tp + tp_index
//
// A tp group holds the ranks that differ only in tp_index, a dp group those
// that differ only in dp_index, a pp group (one rank per stage) those that
// differ only in pp_index.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::engine {

struct TopologyCoords {
  int pp = 0, dp = 0, tp = 0;
  friend bool operator==(const TopologyCoords&, const TopologyCoords&) = default;
};

enum class ParallelAxis { tp, dp, pp };

// What one rank passes to Communicator::split() for one of its groups.
struct SplitArgs {
  int color = 0, key = 0;
  friend bool operator==(const SplitArgs&, const SplitArgs&) = default;
};
const char* axis_name(ParallelAxis a);  // "tp", "dp", "pp"

class Topology {
 public:
  // dp = world / (tp · pp). Throws std::invalid_argument naming
  // tensor_model_parallel_size and pipeline.stages when they do not divide
  // the world or are not positive.
  Topology(int world, int tp, int pp);

  int world() const { return world_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int dp() const { return dp_; }
  int size(ParallelAxis a) const;

  TopologyCoords coords(int rank) const;
  int rank_of(const TopologyCoords& c) const;
  // Ranks of `rank`'s group along `axis`, in the order of that axis' index.
  std::vector<int> group(ParallelAxis axis, int rank) const;
  // Which group along `axis` holds `rank` (0-based; the color for split()).
  int group_index(ParallelAxis axis, int rank) const;
  // `rank`'s split() for its group along `axis`: the group's index as the
  // colour, the rank's index along the axis as the key (group rank = index).
  SplitArgs split_args(ParallelAxis axis, int rank) const;
  // The tied embedding's group (pipeline stages > 1): the first and the last
  // stage of one pipeline share a colour (their pp group's index) and are
  // keyed by stage; every other rank is alone, under a colour of its own past
  // the pipelines' (the MPI split gives every rank a group).
  SplitArgs tied_split_args(int rank) const;
  // "world 8 = pp 2 x dp 2 x tp 2"
  std::string describe() const;

 private:
  int world_, tp_, pp_, dp_;
};

// This rank's communicator per axis, split from `world` (collective over the
// world, in the order tp, dp, pp, with Topology::split_args). Destroy them
// before the world.
struct GroupCommunicators {
  std::unique_ptr<comm::Communicator> tp, dp, pp;
  comm::Communicator& of(ParallelAxis a) const;
};
GroupCommunicators make_group_communicators(comm::Communicator& world, const Topology& topo);

}  // namespace hybrid::engine
