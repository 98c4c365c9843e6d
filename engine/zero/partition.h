// ZeRO partitions one flat index space, never individual tensors: the P
// parameters (padded up to a multiple of the world size) are cut into W equal,
// contiguous shards, shard r = [r·S, (r+1)·S) with S = P/W. Every collective on a
// flat range [a, b) follows from how that range intersects the shards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hybrid::engine {

struct FlatRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  FlatRange intersect(FlatRange o) const {
    return {std::max(begin, o.begin), std::min(end, o.end)};
  }
};

class Partition {
 public:
  Partition(int64_t param_count, int world_size, int rank)
      : n_(param_count),
        world_(world_size),
        rank_(rank),
        shard_((param_count + world_size - 1) / world_size) {}

  int64_t param_count() const { return n_; }          // unpadded
  int64_t padded() const { return shard_ * world_; }  // P
  int64_t shard_size() const { return shard_; }       // S
  int world_size() const { return world_; }
  int rank() const { return rank_; }

  FlatRange shard(int r) const { return {int64_t(r) * shard_, int64_t(r + 1) * shard_}; }
  FlatRange own() const { return shard(rank_); }

  // Elements of `range` in each rank's shard, in rank order: the counts of a
  // reduce-scatter or all-gather over that range.
  std::vector<size_t> counts(FlatRange range) const {
    std::vector<size_t> c(size_t(world_), 0);
    for (int r = 0; r < world_; ++r) {
      auto i = range.intersect(shard(r));
      c[size_t(r)] = i.empty() ? 0 : size_t(i.size());
    }
    return c;
  }

 private:
  int64_t n_;
  int world_;
  int rank_;
  int64_t shard_;
};

}  // namespace hybrid::engine
