#include "engine/model/llama/llama.h"

#include <fmt/format.h>

#include <stdexcept>

#include "engine/model/llama/llama_config.h"

namespace hybrid::engine {

LlamaBlock::LlamaBlock(std::string name, const ModelConfig& m, TensorSlice tp)
    : PreNormBlock(name, "LlamaDecoderLayer", m.n_embd, 6) {
  const int C = m.n_embd, hs = C / m.n_head, NKV = m.kv_heads(), I = llama_intermediate_size(m);
  const int64_t kv = int64_t(NKV) * hs;
  const auto eps = float(m.norm_eps);
  // Megatron's split: qkv_proj by whole heads of q, k and v each (its three
  // stacked matrices cut alike), gate_up_proj by the inner width of gate and up
  // alike, o_proj and down_proj by input features.
  const LinearSplit qkv{LinearSplit::column, tp, {C, kv, kv}},
      gate_up{LinearSplit::column, tp, {I, I}}, row{LinearSplit::row, tp, {}};
  input_layernorm = add_child<RMSNorm>(name + ".input_layernorm", C, eps);
  auto* a = add_child<Sequential>(name + ".self_attn", "LlamaAttention");
  qkv_proj =
      a->add<Linear>(name + ".self_attn.qkv_proj", C, int(C + 2 * kv), false, 0.02f, nullptr, qkv);
  rope = a->add<Rope>(name + ".self_attn.rope", m.n_head / tp.parts, NKV / tp.parts, hs,
                      float(m.rope_theta));
  core = a->add<AttentionCore>(name + ".self_attn.core", C / tp.parts, m.n_head / tp.parts,
                               NKV / tp.parts);
  o_proj = a->add<Linear>(name + ".self_attn.o_proj", C, C, false, 0.02f, nullptr, row);
  self_attn = a;
  post_attention_layernorm = add_child<RMSNorm>(name + ".post_attention_layernorm", C, eps);
  auto* f = add_child<Sequential>(name + ".mlp", "LlamaMLP");
  gate_up_proj =
      f->add<Linear>(name + ".mlp.gate_up_proj", C, 2 * I, false, 0.02f, nullptr, gate_up);
  act = f->add<SwiGlu>(name + ".mlp.act", I / tp.parts);
  down_proj = f->add<Linear>(name + ".mlp.down_proj", I, C, false, 0.02f, nullptr, row);
  f->recompute_children = 2;  // gate_up_proj, act: down_proj's output is read by no backward
  mlp = f;
  norm_1_ = input_layernorm, attention_ = self_attn, norm_2_ = post_attention_layernorm, mlp_ = mlp;
}

std::vector<const Module*> LlamaBlock::recompute_order() const {
  return {this,   input_layernorm,          self_attn, qkv_proj,     rope, core,
          o_proj, post_attention_layernorm, mlp,       gate_up_proj, act};
}

namespace {
// The config names the keys (check_tensor_parallel); this guards the API.
void check_tensor_slice(const ModelConfig& m, int padded_vocab, TensorSlice tp) {
  const int I = llama_intermediate_size(m);
  if (tp.parts < 1 || tp.index < 0 || tp.index >= tp.parts || m.n_head % tp.parts != 0 ||
      m.kv_heads() % tp.parts != 0 || I % tp.parts != 0 || padded_vocab % tp.parts != 0)
    throw std::invalid_argument(fmt::format(
        "llama: tensor-parallel rank {} of {} needs n_head {}, n_kv_head {}, intermediate_size "
        "{} and the padded vocabulary {} to split evenly",
        tp.index, tp.parts, m.n_head, m.kv_heads(), I, padded_vocab));
}
}  // namespace

Llama::Llama(const ModelConfig& cfg, int padded_vocab, TensorSlice tp)
    : DecoderStack("Llama", cfg, padded_vocab), intermediate_(llama_intermediate_size(cfg)) {
  if (cfg.n_head < 1 || cfg.n_embd % cfg.n_head != 0 || cfg.kv_heads() < 1 ||
      cfg.n_head % cfg.kv_heads() != 0 || (cfg.n_embd / cfg.n_head) % 2 != 0)
    throw std::invalid_argument(fmt::format(
        "llama: n_head {} must divide n_embd {} into heads of an even size, and n_kv_head {} "
        "must divide n_head",
        cfg.n_head, cfg.n_embd, cfg.kv_heads()));
  build(tp);
}

void Llama::build(TensorSlice tp) {
  check_tensor_slice(cfg_, Vp_, tp);
  tp_ = tp;
  clear_children();
  blocks.clear();
  blocks_.clear();
  const ModelConfig& m = cfg_;
  embedding = add_child<Embedding>("embedding", Vp_, 0, m.n_embd, tp);  // rotary: no wpe
  for (int l = 0; l < m.n_layer; ++l) {
    blocks.push_back(add_child<LlamaBlock>("h." + std::to_string(l), m, tp));
    blocks_.push_back(blocks.back());
  }
  norm = add_child<RMSNorm>("norm", m.n_embd, float(m.norm_eps));
  // Column-parallel over the vocabulary: each rank's logits are its shard's.
  lm_head = add_child<Linear>("lm_head", m.n_embd, Vp_, false, 0.02f,
                              m.tie_embeddings ? embedding->wte() : nullptr,
                              LinearSplit{LinearSplit::column, tp, {}});
  loss_ = add_child<CrossEntropyLoss>("loss", m.vocab_size, Vp_, tp);
  token_embedding_ = embedding->wte();
  tied_ = m.tie_embeddings ? embedding->wte() : nullptr;
  final_norm_ = norm;
}

void LlamaBlock::wire(const LayoutBuffers& a, const std::string& h, size_t N) {
  void* dresidual = a.data("grad.residual");
  void* dln_1 = a.data("grad.ln_1");
  void* dln_2 = a.data("grad.ln_2");
  void* dqkv = a.data("grad.qkv");
  void* datt = a.data("grad.attn");
  void* dgate_up = a.data("grad.gate_up");
  void* dact = a.data("grad.act");
  void* branch_out = a.data("branch_out");

  RMSNorm& ln1 = *input_layernorm;
  ln1.wire(residual_in, a.data(h + ".input_layernorm.out"), dresidual, dln_1);
  ln1.wire_stats(a.view(h + ".input_layernorm.stats").as<float>(), N);
  qkv_proj->wire(ln1.out, a.data(h + ".self_attn.qkv_proj.out"), dln_1, dqkv);
  rope->qkv = qkv_proj->out;  // turned in place, and its gradient back
  rope->dqkv = dqkv;
  core->qkv = qkv_proj->out;
  core->out = a.data(h + ".self_attn.core.out");
  core->saved = a.data(h + ".self_attn.core.saved");
  core->dqkv = dqkv;
  core->dout = datt;
  o_proj->wire(core->out, branch_out, datt, dresidual);

  residual_mid = a.data(h + ".residual_mid");
  RMSNorm& ln2 = *post_attention_layernorm;
  ln2.wire(residual_mid, a.data(h + ".post_attention_layernorm.out"), dresidual, dln_2);
  ln2.wire_stats(a.view(h + ".post_attention_layernorm.stats").as<float>(), N);
  gate_up_proj->wire(ln2.out, a.data(h + ".mlp.gate_up_proj.out"), dln_2, dgate_up);
  act->gate_up = gate_up_proj->out;
  act->out = a.data(h + ".mlp.act.out");
  act->dgate_up = dgate_up;
  act->dout = dact;
  down_proj->wire(act->out, branch_out, dact, dresidual);

  grad_scratch = entry_buffers(
      a, {"grad.ln_1", "grad.ln_2", "grad.qkv", "grad.attn", "grad.gate_up", "grad.act"});
}

}  // namespace hybrid::engine
