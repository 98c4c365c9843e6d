#include "autotune/generate_spec_reading.h"

#include <fmt/format.h>

#include <cstdint>

#include "autotune/tune_error.h"

namespace hybrid::autotune::spec {

using nlohmann::json;

void refuse(const std::string& key, const std::string& why) {
  throw TuneError(fmt::format("generate spec: {}: {}", key, why));
}

int positive_int(const json& v, const std::string& key) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > INT32_MAX)
    refuse(key, fmt::format("{} is not a positive integer", v.dump()));
  return v.get<int>();
}

std::vector<json> values_at(const json& j, const char* key) {
  if (!j.contains(key)) return {};
  const json& v = j[key];
  if (v.is_array() && v.empty()) refuse(key, "give at least one value");
  return v.is_array() ? std::vector<json>(v.begin(), v.end()) : std::vector<json>{v};
}

std::string text_at(const json& j, const char* key, std::string fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_string() || j[key].get<std::string>().empty()) refuse(key, "must be a path");
  return j[key].get<std::string>();
}

}  // namespace hybrid::autotune::spec
