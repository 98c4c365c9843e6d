// The fortune cookies (Debian packages fortunes and fortunes-de, installed by
// scripts/setup.sh) as a real-text corpus for the tokenizer tests: a file holds
// documents that each end at a line "%".
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hybrid::test {

inline const std::string kFortunesDir = "/usr/share/games/fortunes";

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read (scripts/setup.sh installs fortunes)");
  std::ostringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}

// The documents of one fortune file, each with its lines' newlines, without
// the "%" lines (tests/engine/data/sentencepiece/make_reference.py splits alike).
inline std::vector<std::string> fortune_documents(const std::string& path) {
  const std::string data = read_bytes(path);
  std::vector<std::string> docs;
  std::string doc;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t end = data.find('\n', pos);
    const bool ended = end != std::string::npos;
    if (!ended) end = data.size();
    const std::string_view line(data.data() + pos, end - pos);
    if (line == "%") {
      if (!doc.empty()) docs.push_back(doc);
      doc.clear();
    } else {
      doc.append(line);
      if (ended) doc += '\n';
    }
    pos = end + 1;
  }
  if (!doc.empty()) docs.push_back(doc);
  return docs;
}

// 64-bit FNV-1a over ids, each as 4 little-endian bytes, continuing from `h`.
inline uint64_t fnv1a64(std::span<const int> ids, uint64_t h = 0xCBF29CE484222325ull) {
  for (const int id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xFFu;
      h *= 0x100000001B3ull;
    }
  }
  return h;
}

}  // namespace hybrid::test
