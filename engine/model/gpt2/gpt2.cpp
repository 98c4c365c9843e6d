#include "engine/model/gpt2/gpt2.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace hybrid::engine {

using kernels::DType;

Block::Block(std::string name, int C, int n_head, int n_layer, TensorSlice tp)
    : PreNormBlock(name, "Block", C, 6) {
  const float proj_std = 0.02f / std::sqrt(2.0f * float(n_layer));
  // Megatron's split: c_attn and c_fc by output features (whole heads of q, k
  // and v each), the c_proj layers by input features.
  const LinearSplit column{LinearSplit::column, tp, {}}, qkv{LinearSplit::column, tp, {C, C, C}},
      row{LinearSplit::row, tp, {}};
  ln_1 = add_child<LayerNorm>(name + ".ln_1", C);
  auto* a = add_child<Sequential>(name + ".attn", "CausalSelfAttention");
  c_attn = a->add<Linear>(name + ".attn.c_attn", C, 3 * C, true, 0.02f, nullptr, qkv);
  core = a->add<AttentionCore>(name + ".attn.core", C / tp.parts, n_head / tp.parts);
  attn_proj = a->add<Linear>(name + ".attn.c_proj", C, C, true, proj_std, nullptr, row);
  attn = a;
  ln_2 = add_child<LayerNorm>(name + ".ln_2", C);
  auto* m = add_child<Sequential>(name + ".mlp", "MLP");
  c_fc = m->add<Linear>(name + ".mlp.c_fc", C, 4 * C, true, 0.02f, nullptr, column);
  gelu = m->add<Gelu>(name + ".mlp.gelu", 4 * C / tp.parts);
  mlp_proj = m->add<Linear>(name + ".mlp.c_proj", 4 * C, C, true, proj_std, nullptr, row);
  m->recompute_children = 2;  // c_fc, gelu: c_proj's output is read by no backward
  mlp = m;
  norm_1_ = ln_1, attention_ = attn, norm_2_ = ln_2, mlp_ = mlp;
}

std::vector<const Module*> Block::recompute_order() const {
  return {this, ln_1, attn, c_attn, core, attn_proj, ln_2, mlp, c_fc, gelu};
}

namespace {
// The config names the keys (check_tensor_parallel); this guards the API.
void check_tensor_slice(const ModelConfig& m, int padded_vocab, TensorSlice tp) {
  if (tp.parts < 1 || tp.index < 0 || tp.index >= tp.parts || m.n_head % tp.parts != 0 ||
      m.n_embd % tp.parts != 0 || padded_vocab % tp.parts != 0)
    throw std::invalid_argument(fmt::format(
        "gpt2: tensor-parallel rank {} of {} needs n_head {}, n_embd {} and the padded vocabulary "
        "{} to split evenly",
        tp.index, tp.parts, m.n_head, m.n_embd, padded_vocab));
}
}  // namespace

GPT2::GPT2(const ModelConfig& cfg, int padded_vocab, TensorSlice tp)
    : DecoderStack("GPT2", cfg, padded_vocab) {
  build(tp);
}

void GPT2::build(TensorSlice tp) {
  check_tensor_slice(cfg_, Vp_, tp);
  tp_ = tp;
  clear_children();
  blocks.clear();
  blocks_.clear();
  const ModelConfig& cfg = cfg_;
  embedding = add_child<Embedding>("embedding", Vp_, cfg.seq_len, cfg.n_embd, tp);
  for (int l = 0; l < cfg.n_layer; ++l) {
    blocks.push_back(
        add_child<Block>("h." + std::to_string(l), cfg.n_embd, cfg.n_head, cfg.n_layer, tp));
    blocks_.push_back(blocks.back());
  }
  ln_f = add_child<LayerNorm>("ln_f", cfg.n_embd);
  // Column-parallel over the vocabulary: each rank's logits are its shard's.
  lm_head = add_child<Linear>("lm_head", cfg.n_embd, Vp_, false, 0.02f, embedding->wte(),
                              LinearSplit{LinearSplit::column, tp, {}});
  loss_ = add_child<CrossEntropyLoss>("loss", cfg.vocab_size, Vp_, tp);
  token_embedding_ = tied_ = embedding->wte();
  final_norm_ = ln_f;
}

void Block::wire(const LayoutBuffers& a, const std::string& h, size_t N) {
  void* dresidual = a.data("grad.residual");
  void* dln_1 = a.data("grad.ln_1");
  void* dln_2 = a.data("grad.ln_2");
  void* dqkv = a.data("grad.qkv");
  void* datty = a.data("grad.attn");
  void* dfc = a.data("grad.fc");
  void* dfc_gelu = a.data("grad.fc_gelu");
  void* branch_out = a.data("branch_out");

  ln_1->wire(residual_in, a.data(h + ".ln_1.out"), dresidual, dln_1);
  ln_1->wire_stats(a.view(h + ".ln_1.stats").as<float>(), N);
  c_attn->wire(ln_1->out, a.data(h + ".attn.c_attn.out"), dln_1, dqkv);
  core->qkv = c_attn->out;
  core->out = a.data(h + ".attn.core.out");
  core->saved = a.data(h + ".attn.core.saved");
  core->dqkv = dqkv;
  core->dout = datty;
  attn_proj->wire(core->out, branch_out, datty, dresidual);

  residual_mid = a.data(h + ".residual_mid");
  ln_2->wire(residual_mid, a.data(h + ".ln_2.out"), dresidual, dln_2);
  ln_2->wire_stats(a.view(h + ".ln_2.stats").as<float>(), N);
  c_fc->wire(ln_2->out, a.data(h + ".mlp.c_fc.out"), dln_2, dfc);
  gelu->wire(c_fc->out, a.data(h + ".mlp.gelu.out"), dfc, dfc_gelu);
  mlp_proj->wire(gelu->out, branch_out, dfc_gelu, dresidual);

  grad_scratch = entry_buffers(
      a, {"grad.ln_1", "grad.ln_2", "grad.qkv", "grad.attn", "grad.fc", "grad.fc_gelu"});
}

}  // namespace hybrid::engine
