// The Llama family's model configuration: hybrid.model's Llama keys, and HF's
// LlamaConfig (config.json) both ways. What the architecture varies that we do
// not run (another activation, rope scaling, biases, a head size of its own)
// is refused naming the key. Light: the config parser and the weight readers
// use it without building a model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/config/config.h"

namespace hybrid::engine {

// hybrid.model.intermediate_size when given, else Llama's rule: 8/3 of the
// width rounded up to a multiple of 256.
int llama_intermediate_size(const ModelConfig& m);
// hybrid.model from a Llama config.json (`path` names it in errors).
ModelConfig llama_model_config_from_hf(const nlohmann::json& config, const std::string& path);
// What the Llama family does not run in `m`, named; "" when it runs it.
std::string llama_refusal(const ModelConfig& m);
// config.json for `m`.
nlohmann::json llama_hf_config(const ModelConfig& m);

}  // namespace hybrid::engine
