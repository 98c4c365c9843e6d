// Hugging Face model directories (config.json beside safetensors weights) as
// hybrid.init_from and --export-hf see them: which family a directory holds,
// its hybrid.model, and the check that a config's own hybrid.model agrees.
// The only place that maps an HF architecture to one of our families.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/config/config.h"

namespace hybrid::engine {

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
