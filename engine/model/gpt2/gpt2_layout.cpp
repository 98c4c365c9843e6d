// GPT-2's own activations for one micro-batch, around those every family
// shares (DecoderStack::activation_layout): GPT2::bind allocates and wires
// these entries by name, Module::activation_bytes sums them by owner, and the
// memory model sums them by category. Tensor parallelism cuts the attention,
// the MLP and the logits by s.tp (the attention state is then the backend's
// for n_embd/tp channels and n_head/tp heads).
#include <string>

#include "engine/model/gpt2/gpt2.h"

namespace hybrid::engine {

void GPT2::shared_activations(const ActivationSizes& s, const AddActivation& add) const {
  const uint64_t N = s.N, C = s.C, Cs = s.C / s.tp, d = s.d;
  add("grad.ln_1", N * C, d, "");
  add("grad.ln_2", N * C, d, "");
  add("grad.qkv", N * 3 * Cs, d, "");
  add("grad.attn", N * Cs, d, "");
  add("grad.fc", N * 4 * Cs, d, "");
  add("grad.fc_gelu", N * 4 * Cs, d, "");
}

void GPT2::block_activations(const std::string& h, const std::string& owner_prefix,
                             const ActivationSizes& s, const AddActivation& add) const {
  const uint64_t N = s.N, C = s.C, Cs = s.C / s.tp, d = s.d;
  auto owner = [&](const char* suffix) {
    return owner_prefix.empty() ? std::string() : owner_prefix + suffix;
  };
  add(h + ".ln_1.out", N * C, d, owner(".ln_1"));
  add(h + ".ln_1.stats", 2 * N, 4, owner(".ln_1"));  // mean, rstd
  add(h + ".attn.c_attn.out", N * 3 * Cs, d, owner(".attn.c_attn"));
  add(h + ".attn.core.out", N * Cs, d, owner(".attn.core"));
  add(h + ".attn.core.saved", s.attention_saved, 1, owner(".attn.core"));  // the backend's own
  add(h + ".residual_mid", N * C, d, owner(""));
  add(h + ".ln_2.out", N * C, d, owner(".ln_2"));
  add(h + ".ln_2.stats", 2 * N, 4, owner(".ln_2"));
  add(h + ".mlp.c_fc.out", N * 4 * Cs, d, owner(".mlp.c_fc"));
  add(h + ".mlp.gelu.out", N * 4 * Cs, d, owner(".mlp.gelu"));
}

}  // namespace hybrid::engine
