#include "base/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hybrid::base {

bool contains_ignore_case(std::string_view s, std::string_view what) {
  auto lower = [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(s.begin(), s.end(), what.begin(), what.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != s.end();
}

std::string_view trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

namespace {

template <typename T>
std::optional<T> parse_whole(std::string_view s) {
  T v{};
  const char* end = s.data() + s.size();
  const auto [stop, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || stop != end) return std::nullopt;
  return v;
}

}  // namespace

std::optional<long long> parse_int(std::string_view s) { return parse_whole<long long>(s); }

std::optional<double> parse_double(std::string_view s) { return parse_whole<double>(s); }

}  // namespace hybrid::base
