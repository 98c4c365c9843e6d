#include "engine/model/llama/llama_hf.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/atomic_file.h"
#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "engine/model/hf_directory.h"
#include "engine/model/llama/llama.h"
#include "engine/model/llama/llama_config.h"

namespace hybrid::engine {

namespace {

using nlohmann::json;

// One HF tensor that holds `rows` rows of one of our parameters.
struct HfPiece {
  std::string name;
  int64_t rows;
};

// Our parameter `name` (the whole model's) as HF's tensors, stacked by rows.
// Rows past the pieces (the padded vocabulary) are ours alone and stay 0.
std::vector<HfPiece> hf_pieces(const std::string& name, const ModelConfig& m) {
  const int64_t C = m.n_embd, kv = int64_t(m.kv_heads()) * (C / m.n_head);
  const int64_t I = llama_intermediate_size(m), V = m.vocab_size;
  if (name == "embedding.wte") return {{"model.embed_tokens.weight", V}};
  if (name == "norm.weight") return {{"model.norm.weight", C}};
  if (name == "lm_head.weight") return {{"lm_head.weight", V}};
  const auto dot = name.find('.', 2);  // "h.<layer>.<rest>"
  if (name.rfind("h.", 0) != 0 || dot == std::string::npos)
    throw std::logic_error("llama: no Hugging Face name for parameter " + name);
  const std::string pfx = "model.layers." + name.substr(2, dot - 2) + ".",
                    rest = name.substr(dot + 1);
  if (rest == "self_attn.qkv_proj.weight")
    return {{pfx + "self_attn.q_proj.weight", C},
            {pfx + "self_attn.k_proj.weight", kv},
            {pfx + "self_attn.v_proj.weight", kv}};
  if (rest == "mlp.gate_up_proj.weight")
    return {{pfx + "mlp.gate_proj.weight", I}, {pfx + "mlp.up_proj.weight", I}};
  for (const char* same : {"input_layernorm.weight", "post_attention_layernorm.weight",
                           "self_attn.o_proj.weight", "mlp.down_proj.weight"})
    if (rest == same) return {{pfx + rest, C}};
  throw std::logic_error("llama: no Hugging Face name for parameter " + name);
}

// HF's shape of a piece: a vector for the norms, [rows, columns] otherwise.
std::vector<int64_t> piece_shape(const ParamSpec& p, int64_t rows) {
  if (p.full_shape.size() == 1) return {rows};
  return {rows, p.full_shape[1]};
}

}  // namespace

std::vector<float> read_llama_hf(const std::string& dir, const ModelConfig& m,
                                 const ModuleTree& tree) {
  const SafetensorsSet set(dir);
  std::vector<float> flat(size_t(tree.full_param_count()), 0.0f);
  std::set<std::string> used;
  for (const ParamSpec* p : tree.params()) {
    float* dst = flat.data() + p->full_offset;
    for (const HfPiece& piece : hf_pieces(p->name, m)) {
      const auto v = set.read_f32(piece.name, piece_shape(*p, piece.rows));
      dst = std::copy(v.begin(), v.end(), dst);
      used.insert(piece.name);
    }
  }
  if (m.tie_embeddings && set.find("lm_head.weight")) {
    const int64_t V = m.vocab_size, C = m.n_embd;
    if (set.read_f32("lm_head.weight", {V, C}) != set.read_f32("model.embed_tokens.weight", {V, C}))
      throw DataFileError(fmt::format(
          "{}: lm_head.weight differs from model.embed_tokens.weight, but config.json ties them "
          "(tie_word_embeddings)",
          dir));
    used.insert("lm_head.weight");
  }
  for (const auto& name : set.names())
    if (!used.count(name) && !name.ends_with(".rotary_emb.inv_freq"))
      throw DataFileError(
          fmt::format("{}: tensor '{}' is not part of LlamaForCausalLM (num_hidden_layers {}{})",
                      dir, name, m.n_layer, m.tie_embeddings ? "" : ", untied"));
  return flat;
}

void write_llama_hf(const std::string& dir, const ModelConfig& m, const ModuleTree& tree,
                    const std::vector<float>& flat) {
  std::vector<StTensorOut> out;
  for (const ParamSpec* p : tree.params()) {
    const int64_t columns = p->full_numel() / p->full_shape[0];
    const float* src = flat.data() + p->full_offset;
    for (const HfPiece& piece : hf_pieces(p->name, m)) {
      const auto n = size_t(piece.rows * columns);
      out.push_back({piece.name, piece_shape(*p, piece.rows), {src, n}});
      src += n;
    }
  }
  write_safetensors_dir(dir, out, StDType::F32);
  base::write_file_atomic(dir + "/config.json", llama_hf_config(m).dump(2) + "\n");
}

std::vector<float> Llama::read_weights(const std::string& path, const ModuleTree& tree) const {
  if (!is_hf_directory(path))
    throw DataFileError(fmt::format(
        "{}: not a Hugging Face directory (config.json beside safetensors); the Llama family "
        "reads no other format",
        path));
  return read_llama_hf(path, cfg_, tree);
}

std::string Llama::cannot_write(const WeightFiles& out) const {
  if (out.llmc_file.empty()) return "";
  return fmt::format(
      "{}: llm.c's format holds GPT-2 only, and this model is a llama; write a Hugging Face "
      "directory instead",
      out.llmc_file);
}

void Llama::write_weights(const ModuleTree& tree, const std::vector<float>& flat,
                          const WeightFiles& out) const {
  if (const std::string why = cannot_write(out); !why.empty()) throw std::invalid_argument(why);
  if (!out.hf_dir.empty()) write_llama_hf(out.hf_dir, cfg_, tree, flat);
}

WeightFiles Llama::full_checkpoint_files(const std::string& root) const {
  return {"", root + "/model"};
}

}  // namespace hybrid::engine
