// The Llama family's own activations for one micro-batch, around those every
// family shares (DecoderStack::activation_layout). Tensor parallelism cuts
// the attention (q heads and key/value heads alike), the MLP and the logits
// by s.tp.
#include <string>

#include "engine/model/llama/llama.h"

namespace hybrid::engine {

namespace {
// A rank's widths: the attention's q channels, its packed qkv row, the MLP's
// inner width.
struct Widths {
  uint64_t q, qkv, inner;
};
Widths widths(const ModelConfig& m, int intermediate, uint64_t tp) {
  const uint64_t hs = uint64_t(m.n_embd / m.n_head);
  const uint64_t q = uint64_t(m.n_head) * hs / tp, kv = uint64_t(m.kv_heads()) * hs / tp;
  return {q, q + 2 * kv, uint64_t(intermediate) / tp};
}
}  // namespace

void Llama::shared_activations(const ActivationSizes& s, const AddActivation& add) const {
  const Widths w = widths(cfg_, intermediate_, s.tp);
  const uint64_t N = s.N, C = s.C, d = s.d;
  add("grad.ln_1", N * C, d, "");
  add("grad.ln_2", N * C, d, "");
  add("grad.qkv", N * w.qkv, d, "");
  add("grad.attn", N * w.q, d, "");
  add("grad.gate_up", N * 2 * w.inner, d, "");
  add("grad.act", N * w.inner, d, "");
}

void Llama::block_activations(const std::string& h, const std::string& owner_prefix,
                              const ActivationSizes& s, const AddActivation& add) const {
  const Widths w = widths(cfg_, intermediate_, s.tp);
  const uint64_t N = s.N, C = s.C, d = s.d;
  auto owner = [&](const char* suffix) {
    return owner_prefix.empty() ? std::string() : owner_prefix + suffix;
  };
  add(h + ".input_layernorm.out", N * C, d, owner(".input_layernorm"));
  add(h + ".input_layernorm.stats", N, 4, owner(".input_layernorm"));  // rstd
  add(h + ".self_attn.qkv_proj.out", N * w.qkv, d, owner(".self_attn.qkv_proj"));
  add(h + ".self_attn.core.out", N * w.q, d, owner(".self_attn.core"));
  add(h + ".self_attn.core.saved", s.attention_saved, 1, owner(".self_attn.core"));
  add(h + ".residual_mid", N * C, d, owner(""));
  add(h + ".post_attention_layernorm.out", N * C, d, owner(".post_attention_layernorm"));
  add(h + ".post_attention_layernorm.stats", N, 4, owner(".post_attention_layernorm"));
  add(h + ".mlp.gate_up_proj.out", N * 2 * w.inner, d, owner(".mlp.gate_up_proj"));
  add(h + ".mlp.act.out", N * w.inner, d, owner(".mlp.act"));
}

}  // namespace hybrid::engine
