// What a call threw, for tests of refusals: the message, checked for the words
// that name what was wrong.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybrid::test {

// The message of the E that `fn` threw, or `none` when it threw nothing (an
// exception of another type goes through: the test fails on it).
template <class E = std::exception, class Fn>
std::string error_of(Fn&& fn, const std::string& none = "") {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return none;
}

// The E that `fn` threw, or nullopt when it threw none.
template <class E, class Fn>
std::optional<E> thrown(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e;
  }
  return std::nullopt;
}

// Each patch merged over `base` is refused: `parse(config, "x/config.json")`
// throws an error that names the file and holds the patch's message.
template <class Parse>
void expect_each_refused(const nlohmann::json& base,
                         const std::vector<std::pair<nlohmann::json, const char*>>& refused,
                         Parse&& parse) {
  for (const auto& [patch, message] : refused) {
    auto c = base;
    c.merge_patch(patch);
    const std::string e = error_of([&] { parse(c, "x/config.json"); });
    EXPECT_NE(e.find("x/config.json"), std::string::npos) << e;
    EXPECT_NE(e.find(message), std::string::npos) << patch.dump() << ": " << e;
  }
}

}  // namespace hybrid::test
