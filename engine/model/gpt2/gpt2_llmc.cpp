// Mapping between the engine's module-ordered flat parameters and llm.c's
// tensor-ordered checkpoint layout (engine/data/llmc_checkpoint.h). Both use
// PyTorch's [out, in] weight layout, so each tensor is a straight copy.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <unordered_map>

#include "engine/model/gpt2/gpt2.h"
#include "engine/model/gpt2/gpt2_hf.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine/model/hf_directory.h"

namespace hybrid::engine {

namespace {

// The engine's name of each llm.c tensor (Gpt2Weights::tensors() order); the
// per-layer ones follow "h.<layer>.".
constexpr std::array<const char*, kLlmcTensorCount> kEngineNames = {
    "embedding.wte",      "embedding.wpe",    "ln_1.weight",        "ln_1.bias",
    "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight",        "ln_2.bias",        "mlp.c_fc.weight",    "mlp.c_fc.bias",
    "mlp.c_proj.weight",  "mlp.c_proj.bias",  "ln_f.weight",        "ln_f.bias"};

// Calls fn(llm.c tensor, offset in it, flat offset, count) for every parameter,
// in the whole model's flat space (ParamSpec::full_offset: tensor-parallel
// pieces are gathered and cut elsewhere).
template <class Fn>
void for_each_tensor(const GPT2& model, const ModuleTree& tree, Gpt2Weights& w, Fn&& fn) {
  std::unordered_map<std::string, const ParamSpec*> by_name;
  for (auto* p : tree.params()) by_name[p->name] = p;
  auto spec = [&](const std::string& name) -> const ParamSpec& {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw std::logic_error("gpt2: no parameter " + name);
    return *it->second;
  };
  auto whole = [&](std::vector<float>& t, const std::string& name) {
    const auto& p = spec(name);
    fn(t, 0, p.full_offset, p.full_numel());
  };
  auto layer = [&](std::vector<float>& t, int l, const std::string& name) {
    const auto& p = spec(fmt::format("h.{}.{}", l, name));
    fn(t, size_t(l) * size_t(p.full_numel()), p.full_offset, p.full_numel());
  };
  const auto tensors = w.tensors();
  constexpr size_t first_layer = 2, end_layer = kLlmcTensorCount - 2;  // wte, wpe; ln_f's
  for (size_t i = 0; i < first_layer; ++i) whole(*tensors[i], kEngineNames[i]);
  for (int l = 0; l < model.config().n_layer; ++l)
    for (size_t i = first_layer; i < end_layer; ++i) layer(*tensors[i], l, kEngineNames[i]);
  for (size_t i = end_layer; i < kLlmcTensorCount; ++i) whole(*tensors[i], kEngineNames[i]);
}

void check_shape(const GPT2& model, const Gpt2Weights& w) {
  const auto& c = model.config();
  if (w.num_layers != c.n_layer || w.channels != c.n_embd || w.num_heads != c.n_head ||
      w.vocab_size != c.vocab_size || w.padded_vocab_size != model.padded_vocab() ||
      w.max_seq_len != c.seq_len)
    throw std::invalid_argument(fmt::format(
        "llm.c checkpoint shape (n_layer {}, n_embd {}, n_head {}, vocab {} padded {}, seq_len {}) "
        "differs from the model's (n_layer {}, n_embd {}, n_head {}, vocab {} padded {}, seq_len "
        "{})",
        w.num_layers, w.channels, w.num_heads, w.vocab_size, w.padded_vocab_size, w.max_seq_len,
        c.n_layer, c.n_embd, c.n_head, c.vocab_size, model.padded_vocab(), c.seq_len));
}

}  // namespace

void gpt2_from_llmc(const GPT2& model, const ModuleTree& tree, const Gpt2Weights& w,
                    std::vector<float>& flat) {
  check_shape(model, w);
  flat.assign(size_t(tree.full_param_count()), 0.0f);
  Gpt2Weights& src = const_cast<Gpt2Weights&>(w);  // only read: for_each_tensor serves both ways
  for_each_tensor(model, tree, src,
                  [&](std::vector<float>& t, size_t at, int64_t offset, int64_t n) {
                    std::copy_n(t.data() + at, size_t(n), flat.data() + offset);
                  });
}

void gpt2_to_llmc(const GPT2& model, const ModuleTree& tree, const std::vector<float>& flat,
                  Gpt2Weights& w) {
  w = gpt2_weights_for(model.config(), model.padded_vocab());
  for_each_tensor(model, tree, w, [&](std::vector<float>& t, size_t at, int64_t offset, int64_t n) {
    std::copy_n(flat.data() + offset, size_t(n), t.data() + at);
  });
}

std::vector<float> GPT2::read_weights(const std::string& path, const ModuleTree& tree) const {
  const Gpt2Weights w =
      is_hf_directory(path) ? read_gpt2_hf(path, cfg_, Vp_) : read_llmc_checkpoint(path);
  std::vector<float> flat;
  gpt2_from_llmc(*this, tree, w, flat);
  return flat;
}

void GPT2::write_weights(const ModuleTree& tree, const std::vector<float>& flat,
                         const WeightFiles& out) const {
  Gpt2Weights w;
  gpt2_to_llmc(*this, tree, flat, w);
  if (!out.llmc_file.empty()) write_llmc_checkpoint(out.llmc_file, w);
  if (!out.hf_dir.empty()) write_gpt2_hf(out.hf_dir, w);
}

}  // namespace hybrid::engine
