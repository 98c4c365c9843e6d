// The order documents are read in during an epoch: shuffled by (seed, epoch)
// with a generator and a Fisher–Yates shuffle of our own, so that every rank,
// every machine and every standard library computes the same order
// (std::shuffle and std::uniform_int_distribution differ between libraries).
//
// Generator: SplitMix64 (Steele, Lea and Flood; Vigna's splitmix64.c): the state
// advances by 0x9E3779B97F4A7C15 and each output is the state mixed by two
// xor-shift-multiplies. Epoch e of seed s starts from the state
// splitmix64(splitmix64(s) + e), where splitmix64(x) is the first output of a
// generator whose state is x. Shuffle: for i = n-1 down to 1, swap element i
// with element j, j uniform in 0..i (an output at or above the largest multiple
// of i+1 that fits 64 bits is drawn again, then j = output mod (i+1)).
#pragma once

#include <cstdint>
#include <vector>

namespace hybrid::engine {

// Advances `state` and returns the next output.
uint64_t splitmix64_next(uint64_t& state);

// The generator's state at the start of an epoch's shuffle.
uint64_t epoch_shuffle_state(uint64_t seed, int64_t epoch);

// 0..count-1, shuffled for (seed, epoch) when `shuffle`, else in stream order.
std::vector<int64_t> document_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle);

}  // namespace hybrid::engine
