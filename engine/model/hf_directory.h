// Hugging Face model directories (config.json beside safetensors weights) as
// hybrid.init_from and --export-hf see them: which family a directory holds,
// its hybrid.model, and the check that a config's own hybrid.model agrees.
// The only place that maps an HF architecture to one of our families.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "engine/config/config.h"

namespace hybrid::engine {

// A key of config.json, or HF's default when it is absent (or null); a value
// of another type throws DataFileError naming `path`, the key and the value.
[[noreturn]] void throw_bad_hf_key(const std::string& path, const char* key,
                                   const nlohmann::json& value);
template <class T>
T hf_key(const nlohmann::json& c, const char* key, T fallback, const std::string& path) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const nlohmann::json& v = c[key];
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // An integer that fits: not 2.5, not 1e300 (no narrowing conversions).
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(std::numeric_limits<T>::max())
                                : v.get<int64_t>() < int64_t(std::numeric_limits<T>::min()) ||
                                      v.get<int64_t>() > int64_t(std::numeric_limits<T>::max())))
      throw_bad_hf_key(path, key, v);
    return T(v.get<int64_t>());
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      throw_bad_hf_key(path, key, v);
    }
  }
}

// A config.json key whose value a family does not run: "PATH: "KEY" is VALUE;
// hybrid's FAMILY runs OURS".
[[noreturn]] void throw_unsupported_hf_key(const std::string& path, const char* key,
                                           const std::string& value, const char* family,
                                           const std::string& ours);

// A directory holding config.json.
bool is_hf_directory(const std::string& path);

// hybrid.model from `dir`/config.json; throws DataFileError naming the file for
// an architecture we do not know or a model we do not run.
ModelConfig read_hf_model_config(const std::string& dir);

// Each key that `given` (a config's hybrid.model block) sets must equal the
// directory's; throws ConfigError naming the key and both values.
void check_model_agrees(const nlohmann::json& given, const ModelConfig& from_dir,
                        const std::string& dir);

}  // namespace hybrid::engine
