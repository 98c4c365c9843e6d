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
  ce_ = add_child<CrossEntropyLoss>("loss", cfg.vocab_size, Vp_, tp);
  embedding_ = embedding;
  token_embedding_ = tied_ = embedding->wte();
  final_norm_ = ln_f;
  lm_head_ = lm_head;
  loss_ = ce_;
}

void GPT2::wire_ends(const LayoutBuffers& a) {
  if (first_stage()) {
    embedding->out = a.data(block_input_entry(plan(), 0));
    embedding->dout = a.data("grad.residual");
  }
  if (!last_stage()) return;
  const size_t N = size_t(B()) * size_t(T());
  ln_f->in = a.data(block_input_entry(plan(), cfg_.n_layer));
  ln_f->out = a.data("ln_f.out");
  ln_f->mean = a.view("ln_f.stats").as<float>();
  ln_f->rstd = ln_f->mean + N;
  ln_f->din = a.data("grad.residual");
  ln_f->dout = a.data("grad.ln_f");

  wire_head(a, ln_f->out, a.data("grad.ln_f"));
  for (const char* g : {"grad.residual", "grad.ln_f"})
    head_grad_scratch_.emplace_back(a.data(g), a.view(g).bytes());
}

void GPT2::wire_block(DecoderBlock& block, int layer, const std::string& h,
                      const LayoutBuffers& a) {
  auto& b = static_cast<Block&>(block);
  const size_t N = size_t(B()) * size_t(T());
  void* dresidual = a.data("grad.residual");
  void* dln_1 = a.data("grad.ln_1");
  void* dln_2 = a.data("grad.ln_2");
  void* dqkv = a.data("grad.qkv");
  void* datty = a.data("grad.attn");
  void* dfc = a.data("grad.fc");
  void* dfc_gelu = a.data("grad.fc_gelu");
  void* branch_out = a.data("branch_out");

  b.ln_1->in = b.residual_in;
  b.ln_1->out = a.data(h + ".ln_1.out");
  b.ln_1->mean = a.view(h + ".ln_1.stats").as<float>();
  b.ln_1->rstd = b.ln_1->mean + N;
  b.ln_1->din = dresidual;
  b.ln_1->dout = dln_1;

  b.c_attn->in = b.ln_1->out;
  b.c_attn->out = a.data(h + ".attn.c_attn.out");
  b.c_attn->din = dln_1;
  b.c_attn->dout = dqkv;

  b.core->qkv = b.c_attn->out;
  b.core->out = a.data(h + ".attn.core.out");
  b.core->saved = a.data(h + ".attn.core.saved");
  b.core->dqkv = dqkv;
  b.core->dout = datty;

  b.attn_proj->in = b.core->out;
  b.attn_proj->out = branch_out;
  b.attn_proj->din = datty;
  b.attn_proj->dout = dresidual;

  b.residual_mid = a.data(h + ".residual_mid");
  b.ln_2->in = b.residual_mid;
  b.ln_2->out = a.data(h + ".ln_2.out");
  b.ln_2->mean = a.view(h + ".ln_2.stats").as<float>();
  b.ln_2->rstd = b.ln_2->mean + N;
  b.ln_2->din = dresidual;
  b.ln_2->dout = dln_2;

  b.c_fc->in = b.ln_2->out;
  b.c_fc->out = a.data(h + ".mlp.c_fc.out");
  b.c_fc->din = dln_2;
  b.c_fc->dout = dfc;

  b.gelu->in = b.c_fc->out;
  b.gelu->out = a.data(h + ".mlp.gelu.out");
  b.gelu->din = dfc;
  b.gelu->dout = dfc_gelu;

  b.mlp_proj->in = b.gelu->out;
  b.mlp_proj->out = branch_out;
  b.mlp_proj->din = dfc_gelu;
  b.mlp_proj->dout = dresidual;

  b.residual_out = a.data(block_input_entry(plan(), layer + 1));
  b.branch_out = branch_out;
  b.grad_scratch.clear();
  for (const char* g :
       {"grad.ln_1", "grad.ln_2", "grad.qkv", "grad.attn", "grad.fc", "grad.fc_gelu"})
    b.grad_scratch.emplace_back(a.data(g), a.view(g).bytes());
}

}  // namespace hybrid::engine
