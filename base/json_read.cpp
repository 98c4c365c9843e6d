#include "base/json_read.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace hybrid::base {

using nlohmann::json;

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

std::string describe_json(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

std::string json_error_text(const json::exception& e) {
  std::string msg = e.what();
  if (const auto end = msg.find("] "); msg.rfind("[json.exception", 0) == 0 && end != msg.npos)
    msg.erase(0, end + 2);
  return msg;
}

void json_fail(std::string_view prefix, std::string_view key, std::string_view what,
               const json& got) {
  throw JsonReadError(
      fmt::format("{}: {} must be {}, got {}", prefix, key, what, describe_json(got)));
}

const json* at_path(const json& j, std::initializer_list<std::string_view> path) {
  const json* cur = &j;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

const json* at_dotted(const json& j, std::string_view dotted) {
  const json* cur = &j;
  while (cur) {
    const size_t dot = dotted.find('.');
    cur = at_path(*cur, {dotted.substr(0, dot)});
    if (dot == std::string_view::npos) break;
    dotted.remove_prefix(dot + 1);
  }
  return cur;
}

int64_t json_integer(const json& v, std::string_view prefix, std::string_view key, int64_t lo,
                     int64_t hi) {
  int64_t n = 0;
  bool ok = false;
  if (v.is_number_integer()) {
    ok = !(v.is_number_unsigned() &&
           v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
    if (ok) n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // 5e8 is a float in JSON; accept whole numbers that fit.
    const double d = v.get<double>();
    ok = std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18;
    if (ok) n = int64_t(d);
  }
  if (!ok || n < lo || n > hi) json_fail(prefix, key, integer_what(lo, hi), v);
  return n;
}

bool json_boolean(const json& v, std::string_view prefix, std::string_view key) {
  if (!v.is_boolean()) json_fail(prefix, key, "true or false", v);
  return v.get<bool>();
}

std::string json_string(const json& v, std::string_view prefix, std::string_view key) {
  if (!v.is_string()) json_fail(prefix, key, "a string", v);
  return v.get<std::string>();
}

std::optional<double> number_at(const json& j, std::string_view dotted) {
  const json* v = at_dotted(j, dotted);
  if (v && v->is_number()) return v->get<double>();
  return std::nullopt;
}

std::optional<bool> boolean_at(const json& j, std::string_view dotted) {
  const json* v = at_dotted(j, dotted);
  if (v && v->is_boolean()) return v->get<bool>();
  return std::nullopt;
}

std::optional<std::string> string_at(const json& j, std::string_view dotted) {
  const json* v = at_dotted(j, dotted);
  if (v && v->is_string()) return v->get<std::string>();
  return std::nullopt;
}

}  // namespace hybrid::base
