// The models of the families by hybrid.model.type (engine/model/families.h
// lists the names): a family is a folder of engine/model/, one line here in
// registry.cpp and one in families.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/causal_lm.h"
#include "engine/model/families.h"

namespace hybrid::engine {

// The model `m` describes, cut for tensor-parallel slice `tp`. An unknown type
// is std::invalid_argument naming it and the known ones.
std::unique_ptr<CausalLM> make_model(const ModelConfig& m, int padded_vocab, TensorSlice tp = {});

// The model a weights file or directory holds (an llm.c file's header, a
// Hugging Face directory's config.json) and the padded vocabulary its tensors
// have (a directory's: llm.c's, a multiple of 128); nullopt when `path` is
// neither. A damaged file or an unknown architecture is a DataFileError.
struct StoredModel {
  ModelConfig model;
  int padded_vocab = 0;
  std::string format;  // "llm.c" | "Hugging Face"
};
std::optional<StoredModel> stored_model_in(const std::string& path);

}  // namespace hybrid::engine
