#include "engine/data/tokenizer/utf8_repair.h"

#include <cstdint>
#include <cstring>

namespace hybrid::engine {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The length of the well-formed sequence at text[i], or 0 when it is ill-formed;
// `consumed` is then the length of its maximal subpart (at least 1).
size_t sequence_at(std::string_view text, size_t i, size_t& consumed) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const uint8_t lead = byte(0);
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range (Unicode table 3-7)
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    consumed = 1;
    return 0;
  }
  size_t k = 1;
  for (; k < need && i + k < text.size(); ++k) {
    const uint8_t b = byte(k);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  if (k == need) return need;
  consumed = k;
  return 0;
}

}  // namespace

size_t valid_utf8_prefix(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // Eight ASCII bytes at a time: the common case.
    if (i + 8 <= text.size()) {
      uint64_t word;
      std::memcpy(&word, text.data() + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t consumed = 0;
    const size_t n = sequence_at(text, i, consumed);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::string_view repair_utf8(std::string_view text, std::string& scratch) {
  size_t valid = valid_utf8_prefix(text);
  if (valid == text.size()) return text;
  scratch.clear();
  scratch.reserve(text.size() + 16);
  size_t i = 0;
  while (i < text.size()) {
    scratch.append(text.substr(i, valid - i));
    i = valid;
    if (i == text.size()) break;
    size_t consumed = 0;
    sequence_at(text, i, consumed);
    scratch.append(kReplacement);
    i += consumed;
    valid = i + valid_utf8_prefix(text.substr(i));
  }
  return scratch;
}

}  // namespace hybrid::engine
