// The value readers of `hybrid-tune generate`'s spec files, single-process
// (generate_space.h) and rollout mode (rollout_space.h) alike: every refusal a
// TuneError "generate spec: KEY: why".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hybrid::autotune::spec {

[[noreturn]] void refuse(const std::string& key, const std::string& why);
// An integer in 1..INT32_MAX.
int positive_int(const nlohmann::json& v, const std::string& key);
// A value or a list of them; empty when absent, refused when an empty list.
std::vector<nlohmann::json> values_at(const nlohmann::json& j, const char* key);
// A non-empty string (a path); `fallback` when absent.
std::string text_at(const nlohmann::json& j, const char* key, std::string fallback = "");

}  // namespace hybrid::autotune::spec
