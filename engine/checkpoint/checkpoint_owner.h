// Whose checkpoint a tag is: the model it was saved for and the run lineage
// that wrote it. meta.json's "model" object holds every field of the model
// configuration (ModelConfig, the vocabulary padding resolved), keyed by name,
// with "type" naming the family: a second family (Llama) adds its own fields to
// the same object, and two checkpoints are of one model only when every key
// agrees. The lineage is a random id a fresh run draws and a resumed run takes
// over from the checkpoint it loads, so that keep_last never deletes the tags
// of another run, even one of the same model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

struct CheckpointOwner {
  nlohmann::json model;  // model_identity()
  std::string lineage;   // "": checkpoints written before lineages were recorded
};

// Every field of cfg.model, as meta.json's "model" object stores it.
nlohmann::json model_identity(const Config& cfg);

// The first key whose value differs between a checkpoint's "model" object and
// this config's (the family first), as "model.n_head 4, this config has 2"; ""
// when they agree. A key the checkpoint does not have (it predates the field) is
// not compared: see fields_not_saved.
std::string model_difference(const nlohmann::json& saved, const nlohmann::json& mine);
// The keys of `mine` that a checkpoint's "model" object lacks.
std::vector<std::string> fields_not_saved(const nlohmann::json& saved, const nlohmann::json& mine);

// Whether a tag's (validated or not) meta.json belongs to `owner`: the same
// model, and the same lineage unless either side has none (older checkpoints).
bool belongs_to(const nlohmann::json& meta, const CheckpointOwner& owner);

// A fresh lineage id: 16 hex digits from the system's random source.
std::string new_lineage();

// Before a run saves into `dir`: throws CheckpointError when a tag there with a
// meta.json was saved for another model, naming the folder, the tag and the
// first difference. Tags whose meta.json cannot be read are left to prune's rules.
void check_save_folder(const std::string& dir, const nlohmann::json& model);

}  // namespace hybrid::engine
