#include "engine/data/tokenizer/byte_level_bpe.h"

#include <stdexcept>
#include <type_traits>

#include "engine/data/tokenizer/utf8_repair.h"

namespace hybrid::engine {

static_assert(std::is_same_v<int, int32_t>, "token ids are int32_t and the interface's int alike");

ByteLevelBpe::ByteLevelBpe(ByteLevelBpeSpec spec)
    : spec_(std::move(spec)), added_(spec_.added_tokens) {
  for (size_t i = 0; i < spec_.split_patterns.size(); ++i)
    splits_.push_back(std::make_unique<Pcre2Pattern>(
        spec_.split_patterns[i],
        spec_.split_literal[i] ? Pcre2Pattern::Syntax::literal : Pcre2Pattern::Syntax::oniguruma));
  // Documents end with GPT-2's, Llama 3's or SentencePiece's end-of-text token,
  // whichever the vocabulary has, in that order; sequences begin with Llama 3's
  // or SentencePiece's beginning-of-text token.
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>"})
    if (!eos_) eos_ = token_id(name);
  for (const char* name : {"<|begin_of_text|>", "<s>"})
    if (!bos_) bos_ = token_id(name);
}

std::optional<int> ByteLevelBpe::token_id(std::string_view token) const {
  const auto it = spec_.token_ids.find(std::string(token));
  if (it == spec_.token_ids.end()) return std::nullopt;
  return it->second;
}

std::string ByteLevelBpe::describe() const {
  return "byte-level BPE, " + std::to_string(vocab_size()) + " tokens";
}

std::vector<int> ByteLevelBpe::encode(std::string_view input) const {
  thread_local std::string repaired;
  thread_local std::vector<TextSegment> segments;
  const std::string_view text = repair_utf8(input, repaired);
  // Offsets within a text are 32-bit: a document of 4 GiB is refused, not cut.
  if (text.size() >= (size_t(1) << 32) - 4)
    throw std::length_error(
        "byte-level BPE: a text of " + std::to_string(text.size()) +
        " bytes (UTF-8 repaired) is too long to encode at once (4 GiB at most)");
  added_.split(text, segments);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  for (const TextSegment& s : segments) {
    if (s.id >= 0)
      out.push_back(s.id);
    else
      encode_piece(text.substr(s.begin, s.end - s.begin), out);
  }
  return out;
}

void ByteLevelBpe::encode_piece(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  thread_local std::string prefixed;
  thread_local std::vector<std::pair<uint32_t, uint32_t>> pieces;
  if (spec_.add_prefix_space && text[0] != ' ') {
    prefixed.assign(1, ' ');
    prefixed.append(text);
    text = prefixed;
  }
  pieces.clear();
  split(text, 0, 0, pieces);
  for (const auto& [begin, end] : pieces) encode_word(text.substr(begin, end - begin), out);
}

void ByteLevelBpe::split(std::string_view text, size_t stage, size_t base,
                         std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  if (stage == splits_.size()) {
    pieces.emplace_back(uint32_t(base), uint32_t(base + text.size()));
  } else if (stage + 1 == splits_.size()) {
    splits_[stage]->split_isolated(text, base, pieces);
  } else {
    // A pattern after another one splits each of its pieces (rare: allocates).
    std::vector<std::pair<uint32_t, uint32_t>> outer;
    splits_[stage]->split_isolated(text, 0, outer);
    for (const auto& [begin, end] : outer)
      split(text.substr(begin, end - begin), stage + 1, base + begin, pieces);
  }
}

void ByteLevelBpe::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (spec_.ignore_merges) {
    const auto it = spec_.word_ids.find(std::string(word));
    if (it != spec_.word_ids.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (cache_.find(word, out)) return;
  const size_t before = out.size();
  spec_.merges->encode_word(word, out);
  cache_.insert(word, out.data() + before, out.size() - before);
}

std::string ByteLevelBpe::decode(std::span<const int> ids) const {
  std::string bytes;
  for (const int id : ids) {
    if (id < 0 || id >= vocab_size() || !spec_.has_token[size_t(id)])
      throw std::out_of_range("token id " + std::to_string(id) + " is not in the vocabulary (" +
                              describe() + ")");
    bytes += spec_.token_bytes[size_t(id)];
  }
  // Hugging Face's ByteLevel decoder: bytes that are not UTF-8 (part of a
  // character) become U+FFFD.
  std::string repaired;
  if (repair_utf8(bytes, repaired).data() == bytes.data()) return bytes;
  return repaired;
}

}  // namespace hybrid::engine
