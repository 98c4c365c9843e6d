#include "engine/checkpoint/checkpoint_owner.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "base/json_read.h"
#include "engine/checkpoint/checkpoint.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

// A new ModelConfig field changes its size: add the field to model_identity
// below (and to validate_checkpoint_meta), then this figure.
static_assert(sizeof(ModelConfig) ==
                  sizeof(std::string) + 8 * sizeof(int) + 2 * sizeof(double) + 8 /* bool, padded */,
              "ModelConfig changed: store the new field in model_identity()");

nlohmann::json model_identity(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  return {{"type", m.type},
          {"n_layer", m.n_layer},
          {"n_embd", m.n_embd},
          {"n_head", m.n_head},
          {"vocab_size", m.vocab_size},
          {"padded_vocab_size", cfg.padded_vocab()},  // resolved: 0 means "rounded up"
          {"seq_len", m.seq_len},
          {"n_kv_head", m.kv_heads()},  // resolved: 0 means n_head
          {"intermediate_size", m.intermediate_size},
          {"rope_theta", m.rope_theta},
          {"norm_eps", m.norm_eps},
          {"tie_embeddings", m.tie_embeddings}};
}

namespace {

std::string shown(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : base::describe_json(v);
}

std::string differs(const std::string& key, const nlohmann::json& saved,
                    const nlohmann::json& mine) {
  return fmt::format("model.{} {}, this config has {}", key, shown(saved), shown(mine));
}

}  // namespace

std::string model_difference(const nlohmann::json& saved, const nlohmann::json& mine) {
  if (!saved.is_object()) return "no model object in meta.json";
  // The family first: every other key means something else in another family.
  if (const auto t = saved.find("type"); t != saved.end() && *t != mine.at("type"))
    return differs("type", *t, mine.at("type"));
  for (const auto& [key, value] : mine.items())
    if (const auto it = saved.find(key); it != saved.end() && *it != value)
      return differs(key, *it, value);
  for (const auto& [key, value] : saved.items())  // a field this build does not know
    if (!mine.contains(key)) return differs(key, value, nlohmann::json("none"));
  return "";
}

std::vector<std::string> fields_not_saved(const nlohmann::json& saved, const nlohmann::json& mine) {
  std::vector<std::string> missing;
  for (const auto& [key, value] : mine.items())
    if (!saved.is_object() || !saved.contains(key)) missing.push_back("model." + key);
  return missing;
}

bool belongs_to(const nlohmann::json& meta, const CheckpointOwner& owner) {
  if (!meta.is_object()) return false;
  const auto model = meta.find("model");
  if (model == meta.end() || !model_difference(*model, owner.model).empty()) return false;
  const auto lineage = meta.find("lineage");
  if (owner.lineage.empty() || lineage == meta.end()) return true;
  return lineage->is_string() && *lineage == owner.lineage;
}

std::string new_lineage() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

void check_save_folder(const std::string& dir, const nlohmann::json& model) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path() / "meta.json");
    if (!entry.is_directory() || !in) continue;
    const auto meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!meta.is_object() || meta.value("format", nlohmann::json()) != "hybrid-checkpoint")
      continue;
    const auto saved = meta.find("model");
    const std::string why =
        model_difference(saved != meta.end() ? *saved : nlohmann::json(), model);
    if (!why.empty())
      throw CheckpointError(fmt::format(
          "checkpoint folder {} holds checkpoints of another model ({} was saved for {}): save "
          "into another folder, or remove them first",
          dir, entry.path().filename().string(), why));
  }
}

}  // namespace hybrid::engine
