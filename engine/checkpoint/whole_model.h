// A checkpoint's parameters as one whole model, whatever its layout: each
// tensor-parallel rank's pieces (meta.json's "tensor_parallel" and every
// partition's "tp") put back into whole tensors. Loading under another
// tensor-parallel size and consolidating to llm.c's format go through it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

// meta.json's "tensor_parallel" (1 when absent: no tensor parallelism).
int checkpoint_tensor_parallel(const nlohmann::json& meta);

// meta with only the partitions tensor-parallel rank `tp` wrote.
nlohmann::json partitions_of_tp(const nlohmann::json& meta, int tp);

// fp32 master weights, then state_floats planes of optimizer state, each over
// the whole model's flat space (ParamSpec::full_offset order):
// (1 + state_floats) · whole-model-parameters values.
std::vector<float> read_whole_model(const std::string& dir, const std::string& tag,
                                    const nlohmann::json& meta, const ModelConfig& model,
                                    int padded_vocab, int state_floats);

}  // namespace hybrid::engine
