// A checkpoint's parameters as one whole model, whatever its layout: each
// (pipeline stage, tensor-parallel rank)'s flat space (meta.json's
// "pipeline_stages", "pipeline_partition" and "tensor_parallel"; every
// partition's "pp" and "tp") put back into whole tensors. Loading under
// another layout and consolidating to llm.c's format go through it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

// The layout the flat spaces of a checkpoint's partitions follow (absent
// keys: 1 stage, 1 tensor-parallel rank; the partition method only with
// stages).
struct SavedLayout {
  int pipeline_stages = 1;
  std::string partition;
  int tensor_parallel = 1;
  friend bool operator==(const SavedLayout&, const SavedLayout&) = default;
};
SavedLayout saved_layout(const nlohmann::json& meta);

// meta with only the partitions stage `pp`'s tensor-parallel rank `tp` wrote.
nlohmann::json partitions_of(const nlohmann::json& meta, int pp, int tp);

// fp32 master weights, then state_floats planes of optimizer state, each over
// the whole model's flat space (ParamSpec::full_offset order):
// (1 + state_floats) · whole-model-parameters values.
std::vector<float> read_whole_model(const std::string& dir, const std::string& tag,
                                    const nlohmann::json& meta, const ModelConfig& model,
                                    int padded_vocab, int state_floats);

}  // namespace hybrid::engine
