// GPT-2's activations for one micro-batch, written once: GPT2::bind allocates
// and wires these entries by name, Module::activation_bytes sums them by owner,
// and the memory model sums them by category.
#include <stdexcept>
#include <string>

#include "engine/model/gpt2/gpt2.h"

namespace hybrid::engine {

namespace {

// What a block keeps for backward (all of it, or the checkpointed blocks'
// shared scratch set under the prefix "recompute").
template <class Add>
void block_internals(const std::string& h, const std::string& owner_prefix, uint64_t N, uint64_t C,
                     uint64_t Cs, uint64_t d, uint64_t attention_saved_bytes, Add add) {
  const bool shared = owner_prefix.empty();
  auto owner = [&](const char* suffix) { return shared ? std::string() : owner_prefix + suffix; };
  add(h + ".ln_1.out", N * C, d, owner(".ln_1"));
  add(h + ".ln_1.stats", 2 * N, 4, owner(".ln_1"));  // mean, rstd
  add(h + ".attn.c_attn.out", N * 3 * Cs, d, owner(".attn.c_attn"));
  add(h + ".attn.core.out", N * Cs, d, owner(".attn.core"));
  add(h + ".attn.core.saved", attention_saved_bytes, 1, owner(".attn.core"));  // the backend's own
  add(h + ".residual_mid", N * C, d, owner(""));
  add(h + ".ln_2.out", N * C, d, owner(".ln_2"));
  add(h + ".ln_2.stats", 2 * N, 4, owner(".ln_2"));
  add(h + ".mlp.c_fc.out", N * 4 * Cs, d, owner(".mlp.c_fc"));
  add(h + ".mlp.gelu.out", N * 4 * Cs, d, owner(".mlp.gelu"));
}

}  // namespace

MemoryLayout gpt2_activation_layout(const ModelConfig& m, int Vp, int B, int T, kernels::DType dt,
                                    uint64_t attention_saved_bytes, const CheckpointPlan& plan,
                                    const ActivationStage& stage, int tensor_parts) {
  const int begin = stage.begin, end = stage.end < 0 ? m.n_layer : stage.end;
  const uint64_t N = uint64_t(B) * uint64_t(T), C = uint64_t(m.n_embd), d = kernels::dtype_size(dt);
  const auto tp = uint64_t(tensor_parts);
  const uint64_t Cs = C / tp;  // a tensor-parallel rank's share of the attention and MLP
  MemoryLayout l;
  // owner: the module that keeps the buffer for backward; none for shared ones.
  auto add = [&](std::string name, uint64_t elements, uint64_t size, std::string owner = {}) {
    l.add(std::move(name), elements, size, MemCategory::activations, false, Residency::resident,
          std::move(owner));
  };
  // Inputs first: the engine copies tokens/targets here (see Engine::forward).
  add("tokens", N, 4);
  add("targets", N, 4);
  // A block's input is the previous block's output (the embedding's for block 0)
  // unless it waits in host memory: then it passes through a device slot.
  auto keeps_input = [&](int layer) {
    return block_input_entry(plan, layer).rfind("checkpoint.slot.", 0) != 0;
  };
  if (keeps_input(0) && stage.first) add("embedding.out", N * C, d, "embedding");
  // A later stage receives its input where the previous block would have left it.
  if (keeps_input(begin) && !stage.first)
    add("h." + std::to_string(begin - 1) + ".residual_out", N * C, d);
  // Shared by every layer: the c_proj outputs' scratch and the gradient buffers.
  add("branch_out", N * C, d);
  add("grad.residual", N * C, d);  // one gradient buffer for the whole residual stream
  add("grad.ln_1", N * C, d);
  add("grad.ln_2", N * C, d);
  add("grad.qkv", N * 3 * Cs, d);
  add("grad.attn", N * Cs, d);
  add("grad.fc", N * 4 * Cs, d);
  add("grad.fc_gelu", N * 4 * Cs, d);
  // Checkpointed blocks: one set of internals for all of them, rewritten by each
  // block's forward and again by its recomputation in backward.
  if (plan.any()) block_internals("recompute", "", N, C, Cs, d, attention_saved_bytes, add);
  const int slot_end = stage.last ? end : end + 1;  // the output may go to the next stage's slot
  for (int slot = 0; slot < 2; ++slot)
    for (int layer = begin + (begin + slot) % 2; layer < slot_end; layer += 2)
      if (plan.input_on_host(layer)) {
        add("checkpoint.slot." + std::to_string(slot), N * C, d);
        break;
      }
  for (int layer = begin; layer < end; ++layer) {
    const std::string h = "h." + std::to_string(layer);
    if (!plan.checkpointed(layer)) block_internals(h, h, N, C, Cs, d, attention_saved_bytes, add);
    if (keeps_input(layer + 1)) add(h + ".residual_out", N * C, d, h);
  }
  if (!stage.last) return l;
  add("ln_f.out", N * C, d, "ln_f");
  add("ln_f.stats", 2 * N, 4, "ln_f");
  add("grad.ln_f", N * C, d);
  add("lm_head.out", N * uint64_t(Vp) / tp, d, "lm_head");  // logits, then dlogits in place
  add("loss.stats", 2 * N, 4, "loss");                      // per-token losses, log-sum-exp
  if (tp > 1) add("loss.shards", 2 * N * tp, 4, "loss");    // every shard's log-sum-exp, target
  return l;
}

MemoryLayout gpt2_host_activation_layout(const ModelConfig& m, int B, int T, kernels::DType dt,
                                         const CheckpointPlan& plan) {
  const uint64_t N = uint64_t(B) * uint64_t(T), C = uint64_t(m.n_embd), d = kernels::dtype_size(dt);
  MemoryLayout l;
  for (int layer = 0; layer < m.n_layer; ++layer)
    if (plan.input_on_host(layer)) {
      const std::string h = "h." + std::to_string(layer);
      l.add(h + ".input", N * C, d, MemCategory::activations, false, Residency::resident, h);
    }
  return l;
}

}  // namespace hybrid::engine
