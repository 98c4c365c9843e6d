#include "engine/data/tokenizer/byte_level_alphabet.h"

#include <array>
#include <cstdint>

namespace hybrid::engine {
namespace {

// The code point of each byte: bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand
// for themselves; the others take U+0100, U+0101, ... in byte order.
const std::array<uint16_t, 256>& code_points() {
  static const std::array<uint16_t, 256> table = [] {
    std::array<uint16_t, 256> t{};
    uint16_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool itself = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t[size_t(b)] = itself ? uint16_t(b) : next++;
    }
    return t;
  }();
  return table;
}

// The byte for each code point below U+0144, or -1.
const std::array<int16_t, 0x144>& bytes_of_code_points() {
  static const std::array<int16_t, 0x144> table = [] {
    std::array<int16_t, 0x144> t;
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[code_points()[size_t(b)]] = int16_t(b);
    return t;
  }();
  return table;
}

}  // namespace

std::string byte_level_char(unsigned char byte) {
  const uint16_t cp = code_points()[byte];
  if (cp < 0x80) return std::string(1, char(cp));
  return {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
}

std::optional<std::string> byte_level_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    const auto b0 = static_cast<uint8_t>(token[i]);
    uint32_t cp = b0;
    if (b0 >= 0x80) {
      // Every character of the alphabet is below U+0800: two bytes at most.
      if ((b0 & 0xE0) != 0xC0 || i + 1 >= token.size()) return std::nullopt;
      cp = (uint32_t(b0 & 0x1F) << 6) | (static_cast<uint8_t>(token[i + 1]) & 0x3F);
      i += 2;
    } else {
      ++i;
    }
    if (cp >= bytes_of_code_points().size() || bytes_of_code_points()[cp] < 0) return std::nullopt;
    out += char(bytes_of_code_points()[cp]);
  }
  return out;
}

}  // namespace hybrid::engine
