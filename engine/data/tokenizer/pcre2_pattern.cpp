#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/data/tokenizer/pcre2_pattern.h"

#include <pcre2.h>

#include <stdexcept>

namespace hybrid::engine {
namespace {

// One thread's match data and JIT stack, shared by every pattern: match data of
// one pair suffices (only the whole match's bounds are read).
struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  // Long runs of whitespace backtrack through \s+(?!\S): room beyond the 32 KiB default.
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  ThreadMatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::string oniguruma_to_pcre2(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char next = pattern[++i];
    if (next == 's')
      out += "\\p{White_Space}";
    else if (next == 'S')
      out += "\\P{White_Space}";
    else
      out.append({'\\', next});  // every other escape means the same in both
  }
  return out;
}

Pcre2Pattern::Pcre2Pattern(std::string_view pattern, Syntax syntax) {
  const std::string text =
      syntax == Syntax::oniguruma ? oniguruma_to_pcre2(pattern) : std::string(pattern);
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
  if (syntax == Syntax::literal) options |= PCRE2_LITERAL;
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), options, &error,
                        &offset, nullptr);
  if (code_ == nullptr)
    throw std::invalid_argument("pattern " + std::string(pattern) + ": " + pcre2_message(error) +
                                " at offset " + std::to_string(offset));
  jit_ = pcre2_jit_compile(static_cast<pcre2_code*>(code_), PCRE2_JIT_COMPLETE) == 0;
}

Pcre2Pattern::~Pcre2Pattern() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

int Pcre2Pattern::match(std::string_view text, size_t from, unsigned options, size_t& begin,
                        size_t& end) const {
  ThreadMatchState& state = thread_state();
  const auto* code = static_cast<const pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // The text was checked (repaired) once before any pattern sees it.
  const int rc =
      jit_ && options == 0
          ? pcre2_jit_match(code, subject, text.size(), from, 0, state.data, state.context)
          : pcre2_match(code, subject, text.size(), from, options | PCRE2_NO_UTF_CHECK, state.data,
                        state.context);
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc < 0) throw std::runtime_error("PCRE2 match failed: " + pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
  begin = ovector[0];
  end = ovector[1];
  return 1;
}

bool Pcre2Pattern::find(std::string_view text, size_t from, size_t& begin, size_t& end) const {
  while (from < text.size()) {
    if (!match(text, from, 0, begin, end)) return false;
    if (end > begin) return true;
    // An empty match: look again from the next character.
    from = begin + 1;
    while (from < text.size() && (static_cast<uint8_t>(text[from]) & 0xC0) == 0x80) ++from;
  }
  return false;
}

bool Pcre2Pattern::matches_at_start(std::string_view text) const {
  size_t begin = 0, end = 0;
  return match(text, 0, PCRE2_ANCHORED, begin, end) != 0;
}

void Pcre2Pattern::split_isolated(std::string_view text, size_t base,
                                  std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  size_t at = 0, begin = 0, end = 0;
  while (at < text.size() && find(text, at, begin, end)) {
    if (begin > at) pieces.emplace_back(uint32_t(base + at), uint32_t(base + begin));
    pieces.emplace_back(uint32_t(base + begin), uint32_t(base + end));
    at = end;
  }
  if (at < text.size()) pieces.emplace_back(uint32_t(base + at), uint32_t(base + text.size()));
}

}  // namespace hybrid::engine
