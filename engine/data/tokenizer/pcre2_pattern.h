// A PCRE2 pattern (UTF and Unicode-property mode, JIT-compiled) for the
// tokenizers' Unicode-aware matching: byte-level BPE's split patterns, written
// for Oniguruma in tokenizer.json, and the character classes of the added-token
// matcher. std::regex has no \p{L}. Matching is const and thread-safe: each
// thread keeps its own match data and JIT stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::engine {

class Pcre2Pattern {
 public:
  enum class Syntax { regex, oniguruma, literal };
  // Throws std::invalid_argument with PCRE2's message and the offset at fault.
  // Oniguruma's \s and \S are Unicode's White_Space (with U+0085, which PCRE2's
  // \s leaves out), so they are rewritten to \p{White_Space} and \P{White_Space}.
  Pcre2Pattern(std::string_view pattern, Syntax syntax);
  ~Pcre2Pattern();
  Pcre2Pattern(const Pcre2Pattern&) = delete;
  Pcre2Pattern& operator=(const Pcre2Pattern&) = delete;

  // The first non-empty match in text[from, end) (valid UTF-8): true and its
  // bounds, or false. Throws std::runtime_error when PCRE2 fails (its stack).
  bool find(std::string_view text, size_t from, size_t& begin, size_t& end) const;
  // Whether a match starts exactly at text[0] (an anchored match).
  bool matches_at_start(std::string_view text) const;

  // Isolated split: each match and each gap between matches, as [begin, end)
  // offsets appended to `pieces` (empty matches never make a piece).
  void split_isolated(std::string_view text, size_t base,
                      std::vector<std::pair<uint32_t, uint32_t>>& pieces) const;

 private:
  int match(std::string_view text, size_t from, unsigned options, size_t& begin, size_t& end) const;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

// Oniguruma's \s and \S as PCRE2 writes them (kept apart for its test).
std::string oniguruma_to_pcre2(std::string_view pattern);

}  // namespace hybrid::engine
