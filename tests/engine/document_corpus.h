// Test corpora of documents whose every token tells where it comes from, and a
// reader of packed micro-batches back into their units (document_loader_test.cpp,
// document_packing_test.cpp).
//
// Document d of L tokens (L <= 64, d < 1000): the separator 0, then
// 1 + 64·d + i at offset i = 1..L-1. A token other than the separator names its
// document (token - 1) / 64 and its offset (token - 1) % 64.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/data/token_shard.h"

namespace hybrid::engine::test_corpus {

inline int32_t doc_token(int d, int i) { return i == 0 ? 0 : 1 + 64 * d + i; }
inline int doc_of(int32_t token) { return (token - 1) / 64; }
inline int offset_of(int32_t token) { return (token - 1) % 64; }

// Lengths drawn in [lo, hi] from a fixed mt19937 stream (the raw engine's
// outputs are the same everywhere).
inline std::vector<int> random_lengths(int count, int lo, int hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<int> lengths(size_t(count), 0);
  for (int& l : lengths) l = lo + int(gen() % uint32_t(hi - lo + 1));
  return lengths;
}

inline std::vector<uint16_t> corpus_tokens(const std::vector<int>& lengths) {
  std::vector<uint16_t> tokens;
  for (size_t d = 0; d < lengths.size(); ++d)
    for (int i = 0; i < lengths[d]; ++i) tokens.push_back(uint16_t(doc_token(int(d), i)));
  return tokens;
}

// Writes the tokens as two llm.c shards (a 16-bit one and a 32-bit one, cut
// inside a document) under `dir`; returns the glob that opens them.
inline std::string write_two_shards(const std::filesystem::path& dir,
                                    const std::vector<uint16_t>& tokens) {
  std::filesystem::create_directories(dir);
  const size_t cut = tokens.size() / 2 + 1;
  write_token_shard((dir / "train_000000.bin").string(),
                    std::span<const uint16_t>(tokens.data(), cut));
  const std::vector<uint32_t> rest(tokens.begin() + ptrdiff_t(cut), tokens.end());
  write_token_shard((dir / "train_000001.bin").string(), rest);
  return (dir / "train_*.bin").string();
}

// One row's stretch of tokens with positions 0, 1, 2, ...: a unit, or padding.
struct PackedSegment {
  std::vector<int32_t> inputs, targets;
  bool padding = false;
};

// Splits a micro-batch of rows × T into its segments, row by row, checking
// that positions count up by one inside a segment, that a segment is all
// padding (targets -1, inputs the separator) or all real, and that padding
// only ends a row.
inline std::vector<PackedSegment> read_segments(const int32_t* inputs, const int32_t* targets,
                                                const int32_t* positions, int rows, int T,
                                                int32_t separator) {
  std::vector<PackedSegment> out;
  for (int r = 0; r < rows; ++r) {
    size_t row_first = out.size();
    for (int t = 0; t < T; ++t) {
      const int64_t i = int64_t(r) * T + t;
      if (positions[i] == 0 || t == 0) {
        EXPECT_EQ(positions[i], 0) << "row " << r << " starts inside a unit";
        out.push_back({});
        out.back().padding = targets[i] < 0;
      } else {
        EXPECT_EQ(positions[i], positions[i - 1] + 1) << "row " << r << " column " << t;
      }
      PackedSegment& s = out.back();
      EXPECT_EQ(targets[i] < 0, s.padding) << "row " << r << " column " << t;
      if (s.padding) {
        EXPECT_EQ(targets[i], -1);
        EXPECT_EQ(inputs[i], separator);
      }
      s.inputs.push_back(inputs[i]);
      s.targets.push_back(targets[i]);
    }
    for (size_t k = row_first; k + 1 < out.size(); ++k)
      EXPECT_FALSE(out[k].padding) << "padding before a unit in row " << r;
  }
  return out;
}

}  // namespace hybrid::engine::test_corpus
