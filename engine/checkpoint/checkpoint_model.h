// A checkpoint directory as a model to load whole, whatever world, ZeRO stage,
// tensor or pipeline layout saved it: what hybrid-ckpt consolidates and
// hybrid-generate --model reads.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

struct CheckpointModel {
  std::string dir, tag;
  nlohmann::json meta;
  ModelConfig model;  // padded_vocab_size set
};

// meta.json's model block (fields absent from older checkpoints: defaults).
ModelConfig model_of_checkpoint(const nlohmann::json& meta);

// PATH: a checkpoint directory (the tag its `latest` file names) or one tag's
// folder in it (it holds meta.json); nullopt when it is neither. A meta.json
// that is not a valid checkpoint's is CheckpointError naming it.
std::optional<CheckpointModel> checkpoint_model_in(const std::string& path);

// Every parameter in fp32, the whole model's (ParamSpec::full_offset order);
// CheckpointError when the checkpoint's parameter count is not the model's.
std::vector<float> read_checkpoint_weights(const CheckpointModel& c, int64_t param_count);

}  // namespace hybrid::engine
