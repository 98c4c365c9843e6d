// Hugging Face's byte-level BPE (tokenizer.json of the GPT-2 and Llama 3
// kinds), encoding as tokenizers 0.15.2 does: added tokens matched first, then
// each remaining piece split by the pre-tokenizer's patterns (PCRE2), each
// split's bytes merged by rank (BpeMerges), words cached across threads.
// Loading (byte_level_bpe_json.cpp) reads tokenizer.json into a ByteLevelBpeSpec.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/data/tokenizer/added_token_matcher.h"
#include "engine/data/tokenizer/bpe_merges.h"
#include "engine/data/tokenizer/pcre2_pattern.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "engine/data/tokenizer/word_cache.h"

namespace hybrid::engine {

// What a tokenizer.json says, in the terms hybrid encodes with.
struct ByteLevelBpeSpec {
  std::vector<std::string> split_patterns;  // applied in order, each an Isolated split (Oniguruma)
  std::vector<bool> split_literal;          // the pattern is a plain string, not a regex
  bool add_prefix_space = false;            // ByteLevel's: a space before each piece without one
  bool ignore_merges = false;               // a word in the vocabulary is one token (newer files)
  std::unordered_map<std::string, int32_t> word_ids;  // ignore_merges: the vocabulary's bytes → id
  // Token id → the bytes it decodes to; `has_token[id]` false for ids without one.
  std::vector<std::string> token_bytes;
  std::vector<bool> has_token;
  std::unordered_map<std::string, int32_t> token_ids;  // as tokenizer.json writes them
  std::vector<AddedToken> added_tokens;
  std::array<int32_t, 256> byte_ids{};
  std::optional<int32_t> unk;
  bool fuse_unk = false;
  std::unique_ptr<BpeMerges> merges;
};

class ByteLevelBpe final : public Tokenizer {
 public:
  explicit ByteLevelBpe(ByteLevelBpeSpec spec);

  std::vector<int> encode(std::string_view text) const override;
  std::string decode(std::span<const int> ids) const override;
  int vocab_size() const override { return int(spec_.token_bytes.size()); }
  std::optional<int> token_id(std::string_view token) const override;
  std::optional<int> eos_id() const override { return eos_; }
  std::optional<int> bos_id() const override { return bos_; }
  std::string describe() const override;

 private:
  void encode_piece(std::string_view text, std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  void split(std::string_view text, size_t stage, size_t base,
             std::vector<std::pair<uint32_t, uint32_t>>& pieces) const;

  ByteLevelBpeSpec spec_;
  std::vector<std::unique_ptr<Pcre2Pattern>> splits_;
  AddedTokenMatcher added_;
  mutable WordCache cache_;
  std::optional<int> eos_, bos_;
};

}  // namespace hybrid::engine
