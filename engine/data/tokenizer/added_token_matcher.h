// Added tokens (special or not) found in the text before pre-tokenization, as
// Hugging Face's AddedVocabulary finds them: leftmost-longest matches, first of
// the tokens with normalized=false over the whole text, then of those with
// normalized=true over what is left (with no normalizer both see the same
// text); single_word drops a match that touches a word character (Rust's
// Unicode \w), lstrip and rstrip take the whitespace beside a match into it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/tokenizer/pcre2_pattern.h"

namespace hybrid::engine {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

// A piece of the text: an added token (id >= 0) or text to pre-tokenize (id -1).
struct TextSegment {
  uint32_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);
  bool empty() const { return raw_.empty() && normalized_.empty(); }

  // The segments of `text` (valid UTF-8), in order, covering it.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  // The tokens of one pass, indexed by their first byte, longest first.
  struct Pass {
    std::vector<const AddedToken*> tokens;
    std::array<std::vector<const AddedToken*>, 256> by_first_byte;
    bool empty() const { return tokens.empty(); }
  };
  static void index(Pass& pass);
  void find_matches(const Pass& pass, std::string_view piece, uint32_t base,
                    std::vector<TextSegment>& out) const;
  bool touches_word(std::string_view piece, size_t begin, size_t end) const;

  std::vector<AddedToken> tokens_;
  Pass raw_, normalized_;
  // Rust's \w (Alphabetic, marks, decimal digits, connector punctuation, joiners)
  // and \s (White_Space), one character at a time.
  std::unique_ptr<Pcre2Pattern> word_char_, space_char_;
};

}  // namespace hybrid::engine
