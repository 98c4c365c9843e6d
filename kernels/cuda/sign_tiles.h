// The grid of the CUDA sign-compression kernels (sign_compression.cu), as host
// code with no CUDA include so that the host tests check it in every build:
// each tensor of a group is cut into tiles of at most kSignTile values, one
// CUDA block per tile, one thread per 8 values (one byte of packed signs).
// Tiles start at multiples of 8 from the tensor's start: a chunk is a
// multiple of 8 values, so a byte never straddles two chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hybrid::kernels::cuda {

inline constexpr unsigned kSignThreads = 256;
inline constexpr size_t kSignTile = 8 * kSignThreads;

struct SignTile {
  uint32_t tensor = 0;
  uint32_t len = 0;  // values, at most kSignTile
  uint64_t begin = 0;
};

struct SignTilePlan {
  std::vector<SignTile> tiles;       // tensor by tensor, in order
  std::vector<uint32_t> first_tile;  // count + 1: tensor k has [first_tile[k], first_tile[k + 1])
};

// Tiles over [0, extents[k]) of every tensor k; an extent of 0 has none.
inline SignTilePlan sign_tile_plan(const std::vector<size_t>& extents) {
  SignTilePlan plan;
  plan.first_tile.push_back(0);
  for (size_t k = 0; k < extents.size(); ++k) {
    for (size_t b = 0; b < extents[k]; b += kSignTile)
      plan.tiles.push_back(
          {uint32_t(k), uint32_t(extents[k] - b < kSignTile ? extents[k] - b : kSignTile), b});
    if (plan.tiles.size() > 0x7fffffffu)
      throw std::length_error("sign compression: " + std::to_string(plan.tiles.size()) +
                              " tiles exceed a grid");
    plan.first_tile.push_back(uint32_t(plan.tiles.size()));
  }
  return plan;
}

}  // namespace hybrid::kernels::cuda
