#include "engine/model/gpt2.h"

#include <cmath>
#include <random>

#include "profiler/flops.h"

namespace hybrid::engine {

using kernels::DType;

uint64_t ActivationLayout::total_bytes() const {
  uint64_t t = 0;
  for (auto& e : entries) t += e.bytes * uint64_t(e.count);
  return t;
}

ActivationLayout ActivationLayout::gpt2(const ModelConfig& m, int Vp, int B, int T, DType dt,
                                        uint64_t attention_saved_bytes) {
  const uint64_t N = uint64_t(B) * T, C = uint64_t(m.n_embd), d = kernels::dtype_size(dt);
  const int L = m.n_layer;
  ActivationLayout a;
  a.entries = {
      {"tokens", N * 4, 1},
      {"targets", N * 4, 1},
      {"encoded", N * C * d, 1},
      {"ln_1", N * C * d, L},
      {"ln_1.stats", N * 8, L},
      {"qkv", N * 3 * C * d, L},
      {"attn.out", N * C * d, L},
      {"attn.saved", attention_saved_bytes, L},
      {"residual_mid", N * C * d, L},
      {"ln_2", N * C * d, L},
      {"ln_2.stats", N * 8, L},
      {"fc", N * 4 * C * d, L},
      {"fc.gelu", N * 4 * C * d, L},
      {"residual_out", N * C * d, L},
      {"branch_out", N * C * d, 1},
      {"ln_f", N * C * d, 1},
      {"ln_f.stats", N * 8, 1},
      {"logits", N * uint64_t(Vp) * d, 1},
      {"losses", N * 8, 1},
      {"grad.residual", N * C * d, 1},
      {"grad.ln_f", N * C * d, 1},
      {"grad.ln", N * C * d, 2},
      {"grad.qkv", N * 3 * C * d, 1},
      {"grad.attn.out", N * C * d, 1},
      {"grad.fc", N * 4 * C * d, 2},
  };
  return a;
}

Block::Block(std::string name, int C, int n_head, int n_layer) : Module(name, "Block"), C_(C) {
  const float proj_std = 0.02f / std::sqrt(2.0f * float(n_layer));
  ln_1 = add_child<LayerNorm>(name + ".ln_1", C);
  auto* a = add_child<Sequential>(name + ".attn", "CausalSelfAttention");
  c_attn = a->add<Linear>(name + ".attn.c_attn", C, 3 * C, true, 0.02f);
  core = a->add<AttentionCore>(name + ".attn.core", C, n_head);
  attn_proj = a->add<Linear>(name + ".attn.c_proj", C, C, true, proj_std);
  attn = a;
  ln_2 = add_child<LayerNorm>(name + ".ln_2", C);
  auto* m = add_child<Sequential>(name + ".mlp", "MLP");
  c_fc = m->add<Linear>(name + ".mlp.c_fc", C, 4 * C, true, 0.02f);
  gelu = m->add<Gelu>(name + ".mlp.gelu", 4 * C);
  mlp_proj = m->add<Linear>(name + ".mlp.c_proj", 4 * C, C, true, proj_std);
  mlp = m;
}

void Block::forward(ExecutionContext& ctx) {
  auto& be = ctx.backend();
  const size_t n = size_t(ctx.B()) * ctx.T() * C_;
  ctx.forward(*ln_1);
  ctx.forward(*attn);
  be.residual_forward(ctx.dtype(), residual_mid, residual_in, branch_out, n);
  ctx.forward(*ln_2);
  ctx.forward(*mlp);
  be.residual_forward(ctx.dtype(), residual_out, residual_mid, branch_out, n);
}

// The residual stream has one gradient buffer: a residual add passes its
// gradient to both inputs unchanged, so the branches read dresidual as their
// output gradient and the layernorms add into it.
void Block::backward(ExecutionContext& ctx) {
  for (auto& [ptr, bytes] : grad_scratch) ctx.backend().zero(ptr, bytes);
  ctx.backward(*mlp);
  ctx.backward(*ln_2);
  ctx.backward(*attn);
  ctx.backward(*ln_1);
}

uint64_t Block::forward_flops(int B, int T) const {
  return 2 * profiler::flops::residual_forward(int64_t(B) * T * C_);
}
uint64_t Block::backward_flops(int, int) const { return 0; }

GPT2::GPT2(const ModelConfig& cfg, int padded_vocab) : Module("", "GPT2"), cfg_(cfg), Vp_(padded_vocab) {
  embedding = add_child<Embedding>("embedding", Vp_, cfg.seq_len, cfg.n_embd);
  for (int l = 0; l < cfg.n_layer; ++l)
    blocks.push_back(add_child<Block>("h." + std::to_string(l), cfg.n_embd, cfg.n_head, cfg.n_layer));
  ln_f = add_child<LayerNorm>("ln_f", cfg.n_embd);
  lm_head = add_child<Linear>("lm_head", cfg.n_embd, Vp_, false, 0.02f, embedding->wte());
  ce_ = add_child<CrossEntropyLoss>("loss", cfg.vocab_size, Vp_);
}

void GPT2::bind(TrackingAllocator& alloc, int B, int T, DType dt) {
  if (B == B_ && T == T_) return;
  activations_.clear();
  B_ = B;
  T_ = T;
  const size_t N = size_t(B) * T, C = size_t(cfg_.n_embd), d = kernels::dtype_size(dt);
  const size_t saved = alloc.backend().attention_saved_bytes(dt, B, T, cfg_.n_embd, cfg_.n_head);
  auto take = [&](size_t bytes) {
    activations_.emplace_back(alloc, bytes, MemCategory::activations, /*zeroed=*/false);
    return activations_.back().data();
  };
  // Inputs first: the engine copies tokens/targets here (see Engine::forward).
  tokens_ = static_cast<int32_t*>(take(N * 4));
  targets_ = static_cast<int32_t*>(take(N * 4));

  void* encoded = take(N * C * d);
  void* branch_out = take(N * C * d);
  dresidual_ = take(N * C * d);
  void* dln_1 = take(N * C * d);
  void* dln_2 = take(N * C * d);
  void* dqkv = take(N * 3 * C * d);
  void* datty = take(N * C * d);
  void* dfc = take(N * 4 * C * d);
  void* dfc_gelu = take(N * 4 * C * d);

  embedding->out = encoded;
  embedding->dout = dresidual_;
  const void* residual = encoded;
  for (auto* b : blocks) {
    b->residual_in = residual;
    b->ln_1->in = residual;
    b->ln_1->out = take(N * C * d);
    auto* stats = static_cast<float*>(take(N * 8));
    b->ln_1->mean = stats;
    b->ln_1->rstd = stats + N;
    b->ln_1->din = dresidual_;
    b->ln_1->dout = dln_1;

    b->c_attn->in = b->ln_1->out;
    b->c_attn->out = take(N * 3 * C * d);
    b->c_attn->din = dln_1;
    b->c_attn->dout = dqkv;

    b->core->qkv = b->c_attn->out;
    b->core->out = take(N * C * d);
    b->core->saved = take(saved);
    b->core->dqkv = dqkv;
    b->core->dout = datty;

    b->attn_proj->in = b->core->out;
    b->attn_proj->out = branch_out;
    b->attn_proj->din = datty;
    b->attn_proj->dout = dresidual_;

    b->residual_mid = take(N * C * d);
    b->ln_2->in = b->residual_mid;
    b->ln_2->out = take(N * C * d);
    stats = static_cast<float*>(take(N * 8));
    b->ln_2->mean = stats;
    b->ln_2->rstd = stats + N;
    b->ln_2->din = dresidual_;
    b->ln_2->dout = dln_2;

    b->c_fc->in = b->ln_2->out;
    b->c_fc->out = take(N * 4 * C * d);
    b->c_fc->din = dln_2;
    b->c_fc->dout = dfc;

    b->gelu->in = b->c_fc->out;
    b->gelu->out = take(N * 4 * C * d);
    b->gelu->din = dfc;
    b->gelu->dout = dfc_gelu;

    b->mlp_proj->in = b->gelu->out;
    b->mlp_proj->out = branch_out;
    b->mlp_proj->din = dfc_gelu;
    b->mlp_proj->dout = dresidual_;

    b->residual_out = take(N * C * d);
    b->branch_out = branch_out;
    b->dresidual = dresidual_;
    b->grad_scratch = {{dln_1, N * C * d},     {dln_2, N * C * d}, {dqkv, N * 3 * C * d},
                       {datty, N * C * d},     {dfc, N * 4 * C * d},
                       {dfc_gelu, N * 4 * C * d}};
    residual = b->residual_out;
  }
  ln_f->in = residual;
  ln_f->out = take(N * C * d);
  auto* stats = static_cast<float*>(take(N * 8));
  ln_f->mean = stats;
  ln_f->rstd = stats + N;
  ln_f->din = dresidual_;
  dlnf_ = take(N * C * d);
  ln_f->dout = dlnf_;

  lm_head->in = ln_f->out;
  lm_head->out = take(N * size_t(Vp_) * d);
  lm_head->din = dlnf_;
  lm_head->dout = lm_head->out;  // dlogits are written in place over the logits

  ce_->logits = lm_head->out;
  auto* ce_stats = static_cast<float*>(take(N * 8));
  ce_->losses = ce_stats;
  ce_->lse = ce_stats + N;

  // What each module keeps for backward (outputs and statistics; scratch and
  // gradient buffers are shared and belong to the model).
  const uint64_t act = N * C * d;
  embedding->set_activation_bytes(act);
  for (auto* b : blocks) {
    b->ln_1->set_activation_bytes(act + N * 8);
    b->c_attn->set_activation_bytes(3 * act);
    b->core->set_activation_bytes(act + saved);
    b->attn_proj->set_activation_bytes(0);  // writes the shared branch buffer
    b->attn->set_activation_bytes(4 * act + saved);
    b->ln_2->set_activation_bytes(act + N * 8);
    b->c_fc->set_activation_bytes(4 * act);
    b->gelu->set_activation_bytes(4 * act);
    b->mlp_proj->set_activation_bytes(0);
    b->mlp->set_activation_bytes(8 * act);
    b->set_activation_bytes(b->ln_1->activation_bytes() + b->attn->activation_bytes() +
                            b->ln_2->activation_bytes() + b->mlp->activation_bytes() + 2 * act);
  }
  ln_f->set_activation_bytes(act + N * 8);
  lm_head->set_activation_bytes(N * size_t(Vp_) * d);
  ce_->set_activation_bytes(N * 8);
  uint64_t total = 0;
  for (auto* c : children()) total += c->activation_bytes();
  set_activation_bytes(total);
}

void GPT2::forward(ExecutionContext& ctx) {
  ctx.forward(*embedding);
  for (auto* b : blocks) ctx.forward(*b);
  ctx.forward(*ln_f);
  ctx.forward(*lm_head);
  ctx.forward(*ce_);
}

void GPT2::backward(ExecutionContext& ctx) {
  const size_t act = size_t(ctx.B()) * ctx.T() * cfg_.n_embd * kernels::dtype_size(ctx.dtype());
  ctx.backend().zero(dresidual_, act);
  ctx.backend().zero(dlnf_, act);
  ctx.backward(*ce_);
  ctx.backward(*lm_head);
  ctx.backward(*ln_f);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) ctx.backward(**it);
  ctx.backward(*embedding);
}

std::vector<float> GPT2::initial_parameters(const ModuleTree& tree, uint64_t seed) const {
  std::vector<float> flat(size_t(tree.param_count()), 0.0f);
  // Seeded per parameter, so initial values do not depend on layout or world size.
  for (auto* p : tree.params()) {
    float* dst = flat.data() + p->offset;
    switch (p->init) {
      case ParamInit::zeros: break;
      case ParamInit::ones: std::fill(dst, dst + p->numel, 1.0f); break;
      case ParamInit::normal: {
        std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(p->id) * 0xBF58476D1CE4E5B9ull);
        std::normal_distribution<float> dist(0.0f, p->init_std);
        int64_t n = p->numel;
        if (p == embedding->wte()) n = int64_t(cfg_.vocab_size) * cfg_.n_embd;  // padded rows stay 0
        for (int64_t i = 0; i < n; ++i) dst[i] = dist(rng);
        break;
      }
    }
  }
  return flat;
}

}  // namespace hybrid::engine
