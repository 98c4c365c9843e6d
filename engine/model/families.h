// The model families hybrid knows, by name: hybrid.model.type and the Hugging
// Face architectures each one reads. A light table that the config parser and
// the weight readers use without building a model; the models themselves come
// from engine/model/registry.h. A new family is a folder of engine/model/, one
// row here and one in registry.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

struct FamilyInfo {
  const char* type;                           // hybrid.model.type
  std::vector<std::string> hf_architectures;  // config.json "architectures"[0] or "model_type"
  ModelConfig (*from_hf)(const nlohmann::json& config, const std::string& path);
  // What in a hybrid.model the family does not run, as "hybrid.model.KEY ...:
  // why"; "" when it runs it.
  std::string (*refusal)(const ModelConfig& m);
};

// The family of m.type's refusal of m ("" when it runs m or m.type is unknown).
std::string model_refusal(const ModelConfig& m);

const std::vector<FamilyInfo>& families();

// hybrid.model.type values, in the documentation's order.
std::vector<std::string> model_types();

}  // namespace hybrid::engine
