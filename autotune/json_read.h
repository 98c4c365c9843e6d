// Small typed reads from JSON for the space file and the autotuning block.
// Every failure is a TuneError naming the dotted key, what it must be and what
// it was: "<prefix>: <key> must be <what>, got <value>".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hybrid::autotune::json_read {

// A short rendering of a value for messages ("5", "\"yes\"", "[1,2]").
std::string describe(const nlohmann::json& v);

[[noreturn]] void fail(std::string_view prefix, std::string_view key, std::string_view what,
                       const nlohmann::json& got);

// An integral number (5e8 counts) in [lo, hi].
int64_t integer(const nlohmann::json& v, std::string_view prefix, std::string_view key,
                int64_t lo, int64_t hi);
bool boolean(const nlohmann::json& v, std::string_view prefix, std::string_view key);
std::string string(const nlohmann::json& v, std::string_view prefix, std::string_view key);

}  // namespace hybrid::autotune::json_read
