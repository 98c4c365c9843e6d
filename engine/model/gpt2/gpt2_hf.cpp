#include "engine/model/gpt2/gpt2_hf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "base/atomic_file.h"
#include "base/json_read.h"
#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "engine/model/hf_directory.h"

namespace hybrid::engine {

namespace {

using nlohmann::json;

// A config.json value this family does not run, named.
[[noreturn]] void unsupported(const std::string& path, const char* key, const std::string& value,
                              const std::string& ours) {
  throw_unsupported_hf_key(path, key, value, "GPT-2", ours);
}

// The per-layer tensors: llm.c's vector, HF's name after "h.{l}.", and our
// shape in multiples of the width C: [out·C, in·C] for a weight (every one a
// Conv1D in HF's file, stored [in, out]: transposed from ours), [out·C] when
// in is 0.
struct LayerTensor {
  std::vector<float> Gpt2Weights::*member;
  const char* hf;
  int64_t out, in;
  bool conv1d() const { return in > 0; }
  std::vector<int64_t> shape(int64_t C) const {
    return conv1d() ? std::vector<int64_t>{out * C, in * C} : std::vector<int64_t>{out * C};
  }
};
constexpr LayerTensor kLayerTensors[] = {
    {&Gpt2Weights::ln1w, "ln_1.weight", 1, 0},
    {&Gpt2Weights::ln1b, "ln_1.bias", 1, 0},
    {&Gpt2Weights::qkvw, "attn.c_attn.weight", 3, 1},
    {&Gpt2Weights::qkvb, "attn.c_attn.bias", 3, 0},
    {&Gpt2Weights::attprojw, "attn.c_proj.weight", 1, 1},
    {&Gpt2Weights::attprojb, "attn.c_proj.bias", 1, 0},
    {&Gpt2Weights::ln2w, "ln_2.weight", 1, 0},
    {&Gpt2Weights::ln2b, "ln_2.bias", 1, 0},
    {&Gpt2Weights::fcw, "mlp.c_fc.weight", 4, 1},
    {&Gpt2Weights::fcb, "mlp.c_fc.bias", 4, 0},
    {&Gpt2Weights::fcprojw, "mlp.c_proj.weight", 1, 4},
    {&Gpt2Weights::fcprojb, "mlp.c_proj.bias", 1, 0},
};

// [rows, cols] -> [cols, rows].
std::vector<float> transposed(const std::vector<float>& a, int64_t rows, int64_t cols) {
  std::vector<float> t(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = a[size_t(r * cols + c)];
  return t;
}

}  // namespace

std::string gpt2_refusal(const ModelConfig& m) {
  const ModelConfig gpt2;  // the defaults are GPT-2's
  if (m.kv_heads() != m.n_head)
    return fmt::format("hybrid.model.n_kv_head {}: GPT-2 has as many key/value heads as heads ({})",
                       m.n_kv_head, m.n_head);
  if (m.intermediate_size != 0 && m.intermediate_size != 4 * m.n_embd)
    return fmt::format("hybrid.model.intermediate_size {}: GPT-2's MLP is 4 × n_embd = {}",
                       m.intermediate_size, 4 * m.n_embd);
  if (!m.tie_embeddings) return "hybrid.model.tie_embeddings false: GPT-2 ties lm_head to wte";
  if (m.rope_theta != gpt2.rope_theta)
    return fmt::format("hybrid.model.rope_theta {}: GPT-2 has learned positions, no rotary ones",
                       m.rope_theta);
  if (m.norm_eps != gpt2.norm_eps)
    return fmt::format("hybrid.model.norm_eps {}: GPT-2's layer norms use {}", m.norm_eps,
                       gpt2.norm_eps);
  return "";
}

ModelConfig gpt2_model_config_from_hf(const json& c, const std::string& path) {
  if (!c.is_object()) throw DataFileError(fmt::format("{}: not a JSON object", path));
  ModelConfig m;
  m.type = "gpt2";
  m.n_layer = hf_key(c, "n_layer", 12, path);
  m.n_embd = hf_key(c, "n_embd", 768, path);
  m.n_head = hf_key(c, "n_head", 12, path);
  m.vocab_size = hf_key(c, "vocab_size", 50257, path);
  m.seq_len = hf_key(c, "n_positions", 1024, path);
  for (const auto& [key, v] : {std::pair{"n_layer", m.n_layer}, std::pair{"n_embd", m.n_embd},
                               std::pair{"n_head", m.n_head}, std::pair{"vocab_size", m.vocab_size},
                               std::pair{"n_positions", m.seq_len}})
    if (v < 1)
      throw DataFileError(fmt::format("{}: \"{}\" is {}, not a positive size", path, key, v));
  if (m.n_embd % m.n_head != 0)
    throw DataFileError(
        fmt::format("{}: n_head ({}) does not divide n_embd ({})", path, m.n_head, m.n_embd));
  const auto act = hf_key<std::string>(c, "activation_function", "gelu_new", path);
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    unsupported(path, "activation_function", '"' + act + '"', "GELU's tanh form (\"gelu_new\")");
  const double eps = hf_key(c, "layer_norm_epsilon", 1e-5, path);
  if (std::abs(eps - 1e-5) > 1e-12)
    unsupported(path, "layer_norm_epsilon", fmt::format("{:g}", eps), "1e-05");
  const int inner = hf_key(c, "n_inner", 4 * m.n_embd, path);
  if (inner != 4 * m.n_embd)
    unsupported(path, "n_inner", std::to_string(inner),
                fmt::format("4 × n_embd ({})", 4 * m.n_embd));
  if (!hf_key(c, "tie_word_embeddings", true, path))
    unsupported(path, "tie_word_embeddings", "false", "a head tied to wte");
  if (!hf_key(c, "scale_attn_weights", true, path))
    unsupported(path, "scale_attn_weights", "false", "attention scaled by 1/sqrt(head size)");
  if (hf_key(c, "scale_attn_by_inverse_layer_idx", false, path))
    unsupported(path, "scale_attn_by_inverse_layer_idx", "true", "no scaling by layer");
  if (hf_key(c, "reorder_and_upcast_attn", false, path))
    unsupported(path, "reorder_and_upcast_attn", "true", "attention in fp32 as it is");
  return m;
}

json gpt2_hf_config(const ModelConfig& m) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"vocab_size", m.vocab_size},
          {"n_positions", m.seq_len},
          {"n_embd", m.n_embd},
          {"n_layer", m.n_layer},
          {"n_head", m.n_head},
          {"n_inner", nullptr},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", 1e-5},
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"tie_word_embeddings", true},
          {"torch_dtype", "float32"}};
}

Gpt2Weights read_gpt2_hf(const std::string& dir, const ModelConfig& m, int padded_vocab) {
  const SafetensorsSet set(dir);
  const std::string pfx = set.find("transformer.wte.weight") ? "transformer." : "";
  const int64_t C = m.n_embd, V = m.vocab_size;
  Gpt2Weights w = gpt2_weights_for(m, padded_vocab);
  std::set<std::string> used;
  auto read = [&](const std::string& name, const std::vector<int64_t>& shape) {
    used.insert(name);
    return set.read_f32(name, shape);
  };
  const auto wte = read(pfx + "wte.weight", {V, C});
  std::copy(wte.begin(), wte.end(), w.wte.begin());  // rows V..Vp-1 stay zero
  w.wpe = read(pfx + "wpe.weight", {m.seq_len, C});
  for (int l = 0; l < m.n_layer; ++l)
    for (const auto& t : kLayerTensors) {
      const auto shape = t.shape(C);
      const std::string name = fmt::format("{}h.{}.{}", pfx, l, t.hf);
      const auto v = t.conv1d() ? transposed(read(name, {shape[1], shape[0]}), shape[1], shape[0])
                                : read(name, shape);
      std::copy(v.begin(), v.end(), (w.*t.member).begin() + ptrdiff_t(l) * ptrdiff_t(v.size()));
    }
  w.lnfw = read(pfx + "ln_f.weight", {C});
  w.lnfb = read(pfx + "ln_f.bias", {C});
  if (set.find("lm_head.weight") && read("lm_head.weight", {V, C}) != wte)
    throw DataFileError(
        fmt::format("{}: lm_head.weight differs from {}wte.weight; GPT-2 ties "
                    "them (tie_word_embeddings)",
                    dir, pfx));
  for (const auto& name : set.names()) {
    const bool mask = name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    if (!used.count(name) && !mask)
      throw DataFileError(fmt::format("{}: tensor '{}' is not part of GPT2LMHeadModel (n_layer {})",
                                      dir, name, m.n_layer));
  }
  return w;
}

void write_gpt2_hf(const std::string& dir, const Gpt2Weights& w) {
  const int64_t C = w.channels, V = w.vocab_size;
  std::vector<std::vector<float>> owned;  // transposed Conv1D weights
  owned.reserve(size_t(w.num_layers) * 4);
  std::vector<StTensorOut> out;
  out.push_back({"transformer.wte.weight", {V, C}, {w.wte.data(), size_t(V * C)}});
  out.push_back({"transformer.wpe.weight", {w.max_seq_len, C}, w.wpe});
  for (int l = 0; l < w.num_layers; ++l)
    for (const auto& t : kLayerTensors) {
      const auto shape = t.shape(C);
      const size_t n = size_t(shape[0]) * (shape.size() > 1 ? size_t(shape[1]) : 1);
      std::span<const float> ours((w.*t.member).data() + size_t(l) * n, n);
      const std::string name = fmt::format("transformer.h.{}.{}", l, t.hf);
      if (!t.conv1d()) {
        out.push_back({name, shape, ours});
        continue;
      }
      owned.push_back(transposed({ours.begin(), ours.end()}, shape[0], shape[1]));
      out.push_back({name, {shape[1], shape[0]}, owned.back()});
    }
  out.push_back({"transformer.ln_f.weight", {C}, w.lnfw});
  out.push_back({"transformer.ln_f.bias", {C}, w.lnfb});
  std::filesystem::create_directories(dir);
  write_safetensors_dir(dir, out, StDType::F32);
  base::write_file_atomic(dir + "/config.json", gpt2_hf_config(gpt2_config_of(w)).dump(2) + "\n");
}

}  // namespace hybrid::engine
