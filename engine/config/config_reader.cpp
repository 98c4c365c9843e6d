#include "engine/config/config_reader.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>

#include "base/json_read.h"

namespace hybrid::engine::config_detail {

using nlohmann::json;

void fail(std::string_view key, std::string_view what, const json& got) {
  throw ConfigError(
      fmt::format("config: {} must be {}, got {}", key, what, base::describe_json(got)));
}

bool is_unset(const json& v) {
  return v.is_null() || (v.is_string() && v.get_ref<const std::string&>() == "auto");
}

static std::string integer_what(int64_t lo, int64_t hi) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (lo == kMin && hi == kMax) return "an integer";
  if (hi == kMax) {
    if (lo == 1) return "a positive integer";
    if (lo == 0) return "a non-negative integer";
    return fmt::format("an integer >= {}", lo);
  }
  if (lo == kMin) return fmt::format("an integer <= {}", hi);
  return fmt::format("an integer in {}..{}", lo, hi);
}

int64_t to_integer(const json& v, std::string_view key, std::string_view what) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(key, what, v);
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 5e8 is a float in JSON; accept it when it is a whole number that fits.
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18) return int64_t(d);
  }
  fail(key, what, v);
}

ObjectReader::ObjectReader(const json& obj, std::string path, std::vector<std::string>& ignored)
    : obj_(obj), path_(std::move(path)), ignored_(ignored) {}

std::string ObjectReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const json* ObjectReader::get(std::string_view key) {
  known_.insert(std::string(key));
  auto it = obj_.find(key);
  if (it == obj_.end() || is_unset(*it)) return nullptr;
  return &*it;
}

std::optional<bool> ObjectReader::boolean(std::string_view key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key_path(key), "true or false", *v);
  return v->get<bool>();
}

std::optional<int64_t> ObjectReader::integer(std::string_view key, int64_t lo, int64_t hi,
                                             std::string_view what) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  // An int-sized upper bound is a storage limit, not worth a mention unless exceeded.
  const bool int_limit = hi == INT_MAX;
  std::string desc = what.empty()
                         ? integer_what(lo, int_limit ? std::numeric_limits<int64_t>::max() : hi)
                         : std::string(what);
  const int64_t x = to_integer(*v, key_path(key), desc);
  if (x > hi && int_limit && what.empty()) desc += fmt::format(" no larger than {}", hi);
  if (x < lo || x > hi) fail(key_path(key), desc, *v);
  return x;
}

std::optional<double> ObjectReader::number(std::string_view key, double lo, double hi, bool lo_open,
                                           std::string_view what) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  std::string desc(what);
  if (desc.empty()) {
    const bool has_lo = lo > -std::numeric_limits<double>::max();
    const bool has_hi = hi < std::numeric_limits<double>::max();
    if (has_lo && has_hi)
      desc = fmt::format("a number in {}{}, {}]", lo_open ? "(" : "[", lo, hi);
    else if (has_lo)
      desc = fmt::format("a number {} {}", lo_open ? ">" : ">=", lo);
    else if (has_hi)
      desc = fmt::format("a number <= {}", hi);
    else
      desc = "a finite number";
  }
  if (!v->is_number()) fail(key_path(key), desc, *v);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) fail(key_path(key), desc, *v);
  return x;
}

std::optional<std::string> ObjectReader::string(std::string_view key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key_path(key), "a string", *v);
  return v->get<std::string>();
}

std::optional<std::string> ObjectReader::choice(std::string_view key,
                                                const std::vector<std::string>& choices) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  std::string what = "one of ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) what += i + 1 == choices.size() ? " or " : ", ";
    what += '"' + choices[i] + '"';
  }
  if (!v->is_string()) fail(key_path(key), what, *v);
  const auto& s = v->get_ref<const std::string&>();
  for (const auto& c : choices)
    if (s == c) return s;
  fail(key_path(key), what, *v);
}

const json* ObjectReader::object(std::string_view key) {
  known_.insert(std::string(key));
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  if (!it->is_object()) fail(key_path(key), "an object", *it);
  return &*it;
}

void ObjectReader::finish() {
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!known_.contains(it.key())) ignored_.push_back(key_path(it.key()));
}

}  // namespace hybrid::engine::config_detail
