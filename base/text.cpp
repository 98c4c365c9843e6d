#include "base/text.h"

#include <algorithm>
#include <cctype>

namespace hybrid::base {

bool contains_ignore_case(std::string_view s, std::string_view what) {
  auto lower = [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(s.begin(), s.end(), what.begin(), what.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != s.end();
}

}  // namespace hybrid::base
