#include "engine/model/llama/llama_config.h"

#include <fmt/format.h>

#include "engine/data/data_file_error.h"
#include "engine/model/hf_directory.h"

namespace hybrid::engine {

namespace {

using nlohmann::json;

// A config.json value this family does not run, named.
[[noreturn]] void unsupported(const std::string& path, const char* key, const std::string& value,
                              const std::string& ours) {
  throw_unsupported_hf_key(path, key, value, "Llama", ours);
}

}  // namespace

int llama_intermediate_size(const ModelConfig& m) {
  if (m.intermediate_size > 0) return m.intermediate_size;
  return (8 * m.n_embd / 3 + 255) / 256 * 256;
}

std::string llama_refusal(const ModelConfig& m) {
  if (m.n_head > 0 && m.n_embd % m.n_head == 0 && (m.n_embd / m.n_head) % 2 != 0)
    return fmt::format(
        "hybrid.model.n_head {}: heads of n_embd {} / n_head = {} channels; rotary positions "
        "turn channel pairs, so the head size must be even",
        m.n_head, m.n_embd, m.n_embd / m.n_head);
  return "";
}

ModelConfig llama_model_config_from_hf(const json& c, const std::string& path) {
  if (!c.is_object()) throw DataFileError(fmt::format("{}: not a JSON object", path));
  ModelConfig m;
  m.type = "llama";  // LlamaConfig's defaults where a key is absent
  m.n_layer = hf_key(c, "num_hidden_layers", 32, path);
  m.n_embd = hf_key(c, "hidden_size", 4096, path);
  m.n_head = hf_key(c, "num_attention_heads", 32, path);
  m.n_kv_head = hf_key(c, "num_key_value_heads", m.n_head, path);
  m.intermediate_size = hf_key(c, "intermediate_size", 11008, path);
  m.vocab_size = hf_key(c, "vocab_size", 32000, path);
  m.seq_len = hf_key(c, "max_position_embeddings", 2048, path);
  m.rope_theta = hf_key(c, "rope_theta", 10000.0, path);
  m.norm_eps = hf_key(c, "rms_norm_eps", 1e-6, path);
  m.tie_embeddings = hf_key(c, "tie_word_embeddings", false, path);
  for (const auto& [key, v] :
       {std::pair{"num_hidden_layers", m.n_layer}, std::pair{"hidden_size", m.n_embd},
        std::pair{"num_attention_heads", m.n_head}, std::pair{"num_key_value_heads", m.n_kv_head},
        std::pair{"intermediate_size", m.intermediate_size}, std::pair{"vocab_size", m.vocab_size},
        std::pair{"max_position_embeddings", m.seq_len}})
    if (v < 1)
      throw DataFileError(fmt::format("{}: \"{}\" is {}, not a positive size", path, key, v));
  if (m.n_embd % m.n_head != 0)
    throw DataFileError(fmt::format("{}: num_attention_heads ({}) does not divide hidden_size ({})",
                                    path, m.n_head, m.n_embd));
  if (m.n_head % m.n_kv_head != 0)
    throw DataFileError(
        fmt::format("{}: num_key_value_heads ({}) does not divide num_attention_heads ({})", path,
                    m.n_kv_head, m.n_head));
  if (!(m.rope_theta > 0) || !(m.norm_eps > 0))
    throw DataFileError(fmt::format("{}: rope_theta ({}) and rms_norm_eps ({}) must be positive",
                                    path, m.rope_theta, m.norm_eps));
  const auto act = hf_key<std::string>(c, "hidden_act", "silu", path);
  if (act != "silu") unsupported(path, "hidden_act", '"' + act + '"', "SwiGLU (\"silu\")");
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null())
    unsupported(path, "rope_scaling", c["rope_scaling"].dump(), "unscaled rotary positions");
  for (const char* bias : {"attention_bias", "mlp_bias"})
    if (hf_key(c, bias, false, path)) unsupported(path, bias, "true", "no biases");
  const int head_dim = hf_key(c, "head_dim", m.n_embd / m.n_head, path);
  if (head_dim != m.n_embd / m.n_head)
    unsupported(path, "head_dim", std::to_string(head_dim),
                fmt::format("hidden_size / num_attention_heads ({})", m.n_embd / m.n_head));
  if (const std::string why = llama_refusal(m); !why.empty())
    throw DataFileError(fmt::format("{}: {}", path, why));
  return m;
}

json llama_hf_config(const ModelConfig& m) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", m.vocab_size},
          {"hidden_size", m.n_embd},
          {"intermediate_size", llama_intermediate_size(m)},
          {"num_hidden_layers", m.n_layer},
          {"num_attention_heads", m.n_head},
          {"num_key_value_heads", m.kv_heads()},
          {"hidden_act", "silu"},
          {"max_position_embeddings", m.seq_len},
          {"rms_norm_eps", m.norm_eps},
          {"rope_theta", m.rope_theta},
          {"rope_scaling", nullptr},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"tie_word_embeddings", m.tie_embeddings},
          {"torch_dtype", "float32"}};
}

}  // namespace hybrid::engine
