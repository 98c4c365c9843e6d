// JSON text as every reader of a user's file parses it: comments allowed
// (DeepSpeed reads its config with hjson) and a key given twice in one object
// refused, as DeepSpeed does (dict_raise_error_on_duplicate_keys); nlohmann
// alone would silently keep the last one, so {"mbs": [1, 2], "mbs": [4]} would
// tune mbs=4 only.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace hybrid::base {

// "invalid JSON: parse error at line L, column C: ..." or "duplicate key
// zero_optimization.stage" (the dotted path of the second occurrence). Callers
// that own an error type prefix the file and rethrow it.
class JsonTextError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

nlohmann::json parse_json_text(const std::string& text);

}  // namespace hybrid::base
