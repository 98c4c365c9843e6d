#include "engine/data/tokenizer/added_token_matcher.h"

#include <algorithm>

namespace hybrid::engine {
namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The start of the character that ends at `end`.
size_t previous_char(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && is_continuation(s[i])) --i;
  return i;
}

size_t next_char(std::string_view s, size_t at) {
  size_t i = at + 1;
  while (i < s.size() && is_continuation(s[i])) ++i;
  return i;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  for (const AddedToken& t : tokens_) {
    if (t.content.empty()) continue;
    (t.normalized ? normalized_ : raw_).tokens.push_back(&t);
  }
  index(raw_);
  index(normalized_);
  word_char_ = std::make_unique<Pcre2Pattern>(
      R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])", Pcre2Pattern::Syntax::regex);
  space_char_ = std::make_unique<Pcre2Pattern>(R"(\p{White_Space})", Pcre2Pattern::Syntax::regex);
}

void AddedTokenMatcher::index(Pass& pass) {
  for (const AddedToken* t : pass.tokens)
    pass.by_first_byte[static_cast<unsigned char>(t->content[0])].push_back(t);
  for (auto& list : pass.by_first_byte)
    std::stable_sort(list.begin(), list.end(), [](const AddedToken* a, const AddedToken* b) {
      return a->content.size() > b->content.size();
    });
}

bool AddedTokenMatcher::touches_word(std::string_view piece, size_t begin, size_t end) const {
  if (begin > 0 && word_char_->matches_at_start(piece.substr(previous_char(piece, begin))))
    return true;
  return end < piece.size() && word_char_->matches_at_start(piece.substr(end));
}

void AddedTokenMatcher::find_matches(const Pass& pass, std::string_view piece, uint32_t base,
                                     std::vector<TextSegment>& out) const {
  size_t done = 0;  // the end of the last segment written
  size_t at = 0;    // where the search goes on (aho-corasick's non-overlapping iteration)
  while (at < piece.size()) {
    const auto& candidates = pass.by_first_byte[static_cast<unsigned char>(piece[at])];
    const AddedToken* hit = nullptr;
    for (const AddedToken* t : candidates)
      if (piece.compare(at, t->content.size(), t->content) == 0) {
        hit = t;  // the longest, as the list is sorted
        break;
      }
    if (hit == nullptr) {
      ++at;
      continue;
    }
    size_t begin = at, end = at + hit->content.size();
    at = end;
    if (hit->single_word && touches_word(piece, begin, end)) continue;
    if (hit->lstrip) {
      while (begin > done &&
             space_char_->matches_at_start(piece.substr(previous_char(piece, begin))))
        begin = previous_char(piece, begin);
    }
    if (hit->rstrip)
      while (end < piece.size() && space_char_->matches_at_start(piece.substr(end)))
        end = next_char(piece, end);
    at = end;
    if (begin > done) out.push_back({uint32_t(base + done), uint32_t(base + begin), -1});
    out.push_back({uint32_t(base + begin), uint32_t(base + end), hit->id});
    done = end;
  }
  if (done < piece.size())
    out.push_back({uint32_t(base + done), uint32_t(base + piece.size()), -1});
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  out.clear();
  if (raw_.empty()) {
    out.push_back({0, uint32_t(text.size()), -1});
  } else {
    find_matches(raw_, text, 0, out);
  }
  if (normalized_.empty()) return;
  thread_local std::vector<TextSegment> first;  // kept: no allocation per text once warm
  first.swap(out);
  out.clear();
  for (const TextSegment& s : first) {
    if (s.id >= 0)
      out.push_back(s);
    else
      find_matches(normalized_, text.substr(s.begin, s.end - s.begin), s.begin, out);
  }
}

}  // namespace hybrid::engine
