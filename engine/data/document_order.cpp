#include "engine/data/document_order.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace hybrid::engine {

uint64_t splitmix64_next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t epoch_shuffle_state(uint64_t seed, int64_t epoch) {
  uint64_t state = seed;
  uint64_t keyed = splitmix64_next(state) + uint64_t(epoch);
  return splitmix64_next(keyed);
}

std::vector<int64_t> document_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(size_t(count > 0 ? count : 0));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!shuffle) return order;
  uint64_t state = epoch_shuffle_state(seed, epoch);
  for (size_t i = order.size(); i > 1; --i) {
    const uint64_t bound = i, limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = splitmix64_next(state);
    while (r >= limit);
    std::swap(order[i - 1], order[size_t(r % bound)]);
  }
  return order;
}

}  // namespace hybrid::engine
