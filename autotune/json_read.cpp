#include "autotune/json_read.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "autotune/tune_error.h"

namespace hybrid::autotune::json_read {

using nlohmann::json;

std::string describe(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

void fail(std::string_view prefix, std::string_view key, std::string_view what, const json& got) {
  throw TuneError(fmt::format("{}: {} must be {}, got {}", prefix, key, what, describe(got)));
}

namespace {

std::string integer_what(int64_t lo, int64_t hi) {
  if (hi >= std::numeric_limits<int32_t>::max()) {  // "positive", not "in 1..2147483647"
    if (lo == 1) return "a positive integer";
    if (lo == 0) return "a non-negative integer";
    return fmt::format("an integer >= {}", lo);
  }
  return fmt::format("an integer in {}..{}", lo, hi);
}

}  // namespace

int64_t integer(const json& v, std::string_view prefix, std::string_view key, int64_t lo, int64_t hi) {
  int64_t n = 0;
  bool ok = false;
  if (v.is_number_integer()) {
    ok = !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
    if (ok) n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // 5e8 is a float in JSON; accept whole numbers that fit.
    const double d = v.get<double>();
    ok = std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18;
    if (ok) n = int64_t(d);
  }
  if (!ok || n < lo || n > hi) fail(prefix, key, integer_what(lo, hi), v);
  return n;
}

bool boolean(const json& v, std::string_view prefix, std::string_view key) {
  if (!v.is_boolean()) fail(prefix, key, "true or false", v);
  return v.get<bool>();
}

std::string string(const json& v, std::string_view prefix, std::string_view key) {
  if (!v.is_string()) fail(prefix, key, "a string", v);
  return v.get<std::string>();
}

}  // namespace hybrid::autotune::json_read
