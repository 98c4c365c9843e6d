// Typed reads from JSON with the key path in every error: the config reader,
// the autotuner's space file and the viewer's trial configs all read through
// these. A failure throws JsonReadError "<prefix>: <key> must be <what>, got <value>";
// callers that own an error type (ConfigError, TuneError) catch and rethrow it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hybrid::base {

class JsonReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A short rendering of a value for messages ("5", "\"yes\"", "[1,2]"; at most 80 chars).
std::string describe_json(const nlohmann::json& v);

// What a JSON library exception says, without its internal tag
// ("[json.exception.parse_error.101] "): "parse error at line 3, column 7: ...",
// the position where the text went wrong.
std::string json_error_text(const nlohmann::json::exception& e);

[[noreturn]] void json_fail(std::string_view prefix, std::string_view key, std::string_view what,
                            const nlohmann::json& got);

// The value at a path of object keys, or nullptr when a key is missing or a
// step is not an object: at_path(j, {"zero_optimization", "stage"}).
const nlohmann::json* at_path(const nlohmann::json& j,
                              std::initializer_list<std::string_view> path);
// The same for a dotted path: "zero_optimization.stage".
const nlohmann::json* at_dotted(const nlohmann::json& j, std::string_view dotted);

// An integral number (5e8 counts) in [lo, hi].
int64_t json_integer(const nlohmann::json& v, std::string_view prefix, std::string_view key,
                     int64_t lo, int64_t hi);
bool json_boolean(const nlohmann::json& v, std::string_view prefix, std::string_view key);
std::string json_string(const nlohmann::json& v, std::string_view prefix, std::string_view key);

// Lenient reads for displays: the value when it has the type, else nullopt.
std::optional<double> number_at(const nlohmann::json& j, std::string_view dotted);
std::optional<bool> boolean_at(const nlohmann::json& j, std::string_view dotted);
std::optional<std::string> string_at(const nlohmann::json& j, std::string_view dotted);

}  // namespace hybrid::base
