// GPT-2's activations for one micro-batch, written once: GPT2::bind allocates
// and wires these entries by name, Module::activation_bytes sums them by owner,
// and the memory model sums them by category.
#include <map>
#include <stdexcept>
#include <string>

#include "engine/model/gpt2.h"

namespace hybrid::engine {

MemoryLayout gpt2_activation_layout(const ModelConfig& m, int Vp, int B, int T, kernels::DType dt,
                                    uint64_t attention_saved_bytes) {
  const uint64_t N = uint64_t(B) * uint64_t(T), C = uint64_t(m.n_embd), d = kernels::dtype_size(dt);
  MemoryLayout l;
  // owner: the module that keeps the buffer for backward; none for shared ones.
  auto add = [&](std::string name, uint64_t elements, uint64_t size, std::string owner = {}) {
    l.add(std::move(name), elements, size, MemCategory::activations, false, Residency::resident,
          std::move(owner));
  };
  // Inputs first: the engine copies tokens/targets here (see Engine::forward).
  add("tokens", N, 4);
  add("targets", N, 4);
  add("embedding.out", N * C, d, "embedding");
  // Shared by every layer: the c_proj outputs' scratch and the gradient buffers.
  add("branch_out", N * C, d);
  add("grad.residual", N * C, d);  // one gradient buffer for the whole residual stream
  add("grad.ln_1", N * C, d);
  add("grad.ln_2", N * C, d);
  add("grad.qkv", N * 3 * C, d);
  add("grad.attn", N * C, d);
  add("grad.fc", N * 4 * C, d);
  add("grad.fc_gelu", N * 4 * C, d);
  for (int layer = 0; layer < m.n_layer; ++layer) {
    const std::string h = "h." + std::to_string(layer);
    add(h + ".ln_1.out", N * C, d, h + ".ln_1");
    add(h + ".ln_1.stats", 2 * N, 4, h + ".ln_1");  // mean, rstd
    add(h + ".attn.c_attn.out", N * 3 * C, d, h + ".attn.c_attn");
    add(h + ".attn.core.out", N * C, d, h + ".attn.core");
    add(h + ".attn.core.saved", attention_saved_bytes, 1, h + ".attn.core");  // the backend's own
    add(h + ".residual_mid", N * C, d, h);
    add(h + ".ln_2.out", N * C, d, h + ".ln_2");
    add(h + ".ln_2.stats", 2 * N, 4, h + ".ln_2");
    add(h + ".mlp.c_fc.out", N * 4 * C, d, h + ".mlp.c_fc");
    add(h + ".mlp.gelu.out", N * 4 * C, d, h + ".mlp.gelu");
    add(h + ".residual_out", N * C, d, h);
  }
  add("ln_f.out", N * C, d, "ln_f");
  add("ln_f.stats", 2 * N, 4, "ln_f");
  add("grad.ln_f", N * C, d);
  add("lm_head.out", N * uint64_t(Vp), d, "lm_head");  // logits, then dlogits in place
  add("loss.stats", 2 * N, 4, "loss");                 // per-token losses, log-sum-exp
  return l;
}

namespace {

uint64_t roll_up(Module& m, const std::map<std::string, uint64_t>& own, size_t& matched) {
  uint64_t total = 0;
  if (!m.name().empty())
    if (auto it = own.find(m.name()); it != own.end()) {
      total = it->second;
      ++matched;
    }
  for (auto* c : m.children()) total += roll_up(*c, own, matched);
  m.set_activation_bytes(total);
  return total;
}

}  // namespace

void assign_activation_bytes(Module& root, const MemoryLayout& layout) {
  std::map<std::string, uint64_t> own;
  for (const auto& e : layout.entries())
    if (!e.owner.empty()) own[e.owner] += e.bytes();
  size_t matched = 0;
  roll_up(root, own, matched);
  if (matched != own.size())
    throw std::logic_error("activation layout: an entry's owner is not a module of the model");
}

}  // namespace hybrid::engine
