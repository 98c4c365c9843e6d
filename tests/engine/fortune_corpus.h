// The fortune cookies (Debian packages fortunes and fortunes-de, installed by
// scripts/setup.sh) as a real-text corpus for the tokenizer tests
// (engine/data/fortune_corpus.h splits them), and the FNV-1a hashes their
// reference files keep of the ids.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/data/fortune_corpus.h"
#include "engine/data/text_documents.h"

namespace hybrid::test {

inline const std::string kFortunesDir = engine::kFortunesDir;

inline std::string read_bytes(const std::string& path) { return engine::read_whole_file(path); }

// The documents of one fortune file (the reference scripts split alike).
inline std::vector<std::string> fortune_documents(const std::string& path) {
  return engine::fortune_documents(read_bytes(path));
}

// 64-bit FNV-1a over bytes, continuing from `h`.
inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 0xCBF29CE484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

// The same over ids, each as 4 little-endian bytes.
inline uint64_t fnv1a64(std::span<const int> ids, uint64_t h = 0xCBF29CE484222325ull) {
  for (const int id : ids) {
    const auto u = static_cast<uint32_t>(id);
    const unsigned char bytes[4] = {uint8_t(u), uint8_t(u >> 8), uint8_t(u >> 16),
                                    uint8_t(u >> 24)};
    h = fnv1a64(bytes, 4, h);
  }
  return h;
}

}  // namespace hybrid::test
