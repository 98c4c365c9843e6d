#include "engine/checkpoint/checkpoint_model.h"

#include <fmt/format.h>

#include <filesystem>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/whole_model.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

ModelConfig model_of_checkpoint(const nlohmann::json& meta) {
  const auto& m = meta.at("model");
  ModelConfig c;
  c.type = m.at("type").get<std::string>();
  c.n_layer = m.at("n_layer").get<int>();
  c.n_embd = m.at("n_embd").get<int>();
  c.n_head = m.at("n_head").get<int>();
  c.vocab_size = m.at("vocab_size").get<int>();
  c.padded_vocab_size = m.at("padded_vocab_size").get<int>();
  c.seq_len = m.at("seq_len").get<int>();
  // Absent from checkpoints written before the Llama fields: the defaults.
  c.n_kv_head = m.value("n_kv_head", c.n_kv_head);
  c.intermediate_size = m.value("intermediate_size", c.intermediate_size);
  c.rope_theta = m.value("rope_theta", c.rope_theta);
  c.norm_eps = m.value("norm_eps", c.norm_eps);
  c.tie_embeddings = m.value("tie_embeddings", c.tie_embeddings);
  return c;
}

std::optional<CheckpointModel> checkpoint_model_in(const std::string& path) {
  std::error_code ec;
  CheckpointModel c;
  if (fs::is_regular_file(fs::path(path) / "latest", ec)) {
    c.dir = path;
    c.tag = resolve_checkpoint_tag(path, "");
  } else if (fs::is_regular_file(fs::path(path) / "meta.json", ec)) {
    fs::path folder = fs::path(path).lexically_normal();
    if (!folder.has_filename()) folder = folder.parent_path();  // "DIR/TAG/"
    c.dir = folder.parent_path().string();
    c.tag = folder.filename().string();
  } else {
    return std::nullopt;
  }
  c.meta = read_checkpoint_meta(c.dir, c.tag);
  c.model = model_of_checkpoint(c.meta);
  return c;
}

std::vector<float> read_checkpoint_weights(const CheckpointModel& c, int64_t param_count) {
  const int64_t saved = c.meta.at("param_count").get<int64_t>();
  if (saved != param_count)
    throw CheckpointError(fmt::format("checkpoint {}/{}: {} parameters recorded, the model has {}",
                                      c.dir, c.tag, saved, param_count));
  // Tensor-parallel pieces are put back into whole tensors.
  return read_whole_model(c.dir, c.tag, c.meta, c.model, c.model.padded_vocab_size, 0);
}

}  // namespace hybrid::engine
