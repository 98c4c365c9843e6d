#include "engine/model/gpt2/gpt2.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>

#include "profiler/flops.h"

namespace hybrid::engine {

using kernels::DType;

Block::Block(std::string name, int C, int n_head, int n_layer, TensorSlice tp)
    : DecoderBlock(name, "Block"), C_(C) {
  const float proj_std = 0.02f / std::sqrt(2.0f * float(n_layer));
  // Megatron's split: c_attn and c_fc by output features (whole heads of q, k
  // and v each), the c_proj layers by input features.
  const LinearSplit column{LinearSplit::column, tp}, qkv{LinearSplit::column, tp, 3},
      row{LinearSplit::row, tp};
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

// What backward reads: the layernorm inputs and statistics, qkv, the attention
// output and the backend's saved state, fc and gelu outputs. mlp.c_proj's
// output and the block's output are read by nobody in backward.
void Block::recompute(ExecutionContext& ctx) {
  auto& be = ctx.backend();
  ctx.forward(*ln_1);
  ctx.forward(*attn);
  be.residual_forward(ctx.dtype(), residual_mid, residual_in, branch_out,
                      size_t(ctx.B()) * ctx.T() * C_);
  ctx.forward(*ln_2);
  ctx.forward(*mlp);  // c_fc and gelu (recompute_children)
}

std::vector<const Module*> Block::recompute_order() const {
  return {this, ln_1, attn, c_attn, core, attn_proj, ln_2, mlp, c_fc, gelu};
}

uint64_t Block::forward_flops(int B, int T) const {
  return 2 * profiler::flops::residual_forward(int64_t(B) * T * C_);
}
uint64_t Block::backward_flops(int, int) const { return 0; }
uint64_t Block::recompute_flops(int B, int T) const {
  return profiler::flops::residual_forward(int64_t(B) * T * C_);
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
    : CausalLM("", "GPT2"), cfg_(cfg), Vp_(padded_vocab) {
  build(tp);
}

void GPT2::build(TensorSlice tp) {
  check_tensor_slice(cfg_, Vp_, tp);
  tp_ = tp;
  clear_children();
  blocks.clear();
  const ModelConfig& cfg = cfg_;
  embedding = add_child<Embedding>("embedding", Vp_, cfg.seq_len, cfg.n_embd, tp);
  for (int l = 0; l < cfg.n_layer; ++l)
    blocks.push_back(
        add_child<Block>("h." + std::to_string(l), cfg.n_embd, cfg.n_head, cfg.n_layer, tp));
  ln_f = add_child<LayerNorm>("ln_f", cfg.n_embd);
  // Column-parallel over the vocabulary: each rank's logits are its shard's.
  lm_head = add_child<Linear>("lm_head", cfg.n_embd, Vp_, false, 0.02f, embedding->wte(),
                              LinearSplit{LinearSplit::column, tp});
  ce_ = add_child<CrossEntropyLoss>("loss", cfg.vocab_size, Vp_, tp);
}

void GPT2::set_tensor_slice(TensorSlice tp) {
  if (!slots_.empty())
    throw std::logic_error("GPT2::set_tensor_slice: before bind (it changes every shape)");
  build(tp);
}

void GPT2::bind(TrackingAllocator& alloc, int B, int T, DType dt, const CheckpointPlan& plan,
                TrackingAllocator* host, int slots) {
  if (B == B_ && T == T_ && plan == checkpoints_.plan() && slots == this->slots()) return;
  if (T < 1 || T > cfg_.seq_len)  // positions past the block size have no wpe row
    throw std::invalid_argument(fmt::format(
        "gpt2: sequence length {} must be in 1..{} (the block size, hybrid.model.seq_len)", T,
        cfg_.seq_len));
  if (plan.host_inputs && plan.any() && !host)
    throw std::logic_error("GPT2::bind: block inputs kept in host memory need a host allocator");
  if (slots < 1) throw std::invalid_argument("GPT2::bind: at least one activation slot");
  slots_.clear();  // the old micro-batch's buffers go first
  B_ = B;
  T_ = T;
  dt_ = dt;
  checkpoints_.set_plan(plan);
  const uint64_t saved = alloc.backend().attention_saved_bytes(dt, B, T, cfg_.n_embd / tp_.parts,
                                                               cfg_.n_head / tp_.parts);
  const MemoryLayout layout = activation_layout(
      B, T, dt, saved, plan, {stage_begin_, stage_end_, first_, last_}, tp_.parts);
  for (int i = 0; i < slots; ++i) {
    Slot slot;
    slot.activations = LayoutBuffers(alloc, layout);
    if (host) slot.host_activations = LayoutBuffers(*host, host_activation_layout(B, T, dt, plan));
    slots_.push_back(std::move(slot));
  }
  for (auto* b : blocks) b->stream_bytes = stream_bytes();
  use_slot(0);
  assign_activation_bytes(*this, layout);
}

void GPT2::use_slot(int slot) {
  if (slot < 0 || slot >= slots())
    throw std::out_of_range(fmt::format("GPT2::use_slot: slot {} of {}", slot, slots()));
  slot_ = slot;
  wire();
}

MemoryLayout GPT2::activation_layout(int B, int T, DType dt, uint64_t attention_saved_bytes,
                                     const CheckpointPlan& plan, const ActivationStage& stage,
                                     int tensor_parts) const {
  return gpt2_activation_layout(cfg_, Vp_, B, T, dt, attention_saved_bytes, plan, stage,
                                tensor_parts);
}

MemoryLayout GPT2::host_activation_layout(int B, int T, DType dt,
                                          const CheckpointPlan& plan) const {
  return gpt2_host_activation_layout(cfg_, B, T, dt, plan);
}

size_t GPT2::stream_bytes() const {
  return size_t(B_) * size_t(T_) * size_t(cfg_.n_embd) * kernels::dtype_size(dt_);
}

void GPT2::set_stage(int begin, int end, bool first, bool last) {
  if (begin < 0 || end > cfg_.n_layer || begin >= end)
    throw std::invalid_argument(
        fmt::format("GPT2::set_stage: blocks [{}, {}) of {}", begin, end, cfg_.n_layer));
  if (embedding->wte()->offset >= 0 || !slots_.empty())
    throw std::logic_error(
        "GPT2::set_stage: before the ModuleTree (it drops the other stages' parameters)");
  stage_begin_ = begin;
  stage_end_ = end;
  first_ = first;
  last_ = last;
  // Another stage's parameters take no room here; the tied wte stays on the last.
  const std::function<void(Module&)> drop = [&](Module& m) {
    for (ParamSpec* p : m.own_params()) p->numel = 0;
    for (Module* c : m.children()) drop(*c);
  };
  if (!first) embedding->wpe()->numel = 0;
  if (!first && !last) embedding->wte()->numel = 0;
  for (int l = 0; l < cfg_.n_layer; ++l)
    if (l < begin || l >= end) drop(*blocks[size_t(l)]);
  if (!last) drop(*ln_f);
}

namespace {
// A module's parameters on a rank that holds all of them (its tensor-parallel
// pieces' shapes), whichever stage this model runs.
int64_t subtree_params(const Module& m) {
  int64_t n = 0;
  for (const ParamSpec* p : m.own_params())
    n += std::accumulate(p->shape.begin(), p->shape.end(), int64_t(1), std::multiplies<>());
  for (const Module* c : m.children()) n += subtree_params(*c);
  return n;
}
}  // namespace

void GPT2::set_pipeline_stage(int stage, int stages, const std::string& method) {
  const auto parts = partition_stages(stages, method);
  if (stage < 0 || stage >= stages)
    throw std::invalid_argument(fmt::format("GPT2: pipeline stage {} of {}", stage, stages));
  set_stage(parts[size_t(stage)].begin, parts[size_t(stage)].end, stage == 0, stage == stages - 1);
}

std::vector<StageBlocks> GPT2::partition_stages(int stages, const std::string& method) const {
  return partition_blocks(cfg_.n_layer, stages, method, subtree_params(*blocks.front()),
                          subtree_params(*embedding), subtree_params(*ln_f));
}

void* GPT2::stage_input() const {
  return acts().data(block_input_entry(checkpoints_.plan(), stage_begin_));
}
const void* GPT2::stage_output() const {
  const int end = stage_end_ < 0 ? cfg_.n_layer : stage_end_;
  return acts().data(block_input_entry(checkpoints_.plan(), end));
}
void* GPT2::residual_grad() const { return acts().data("grad.residual"); }

// Only what this stage runs: the others' buffers do not exist (ActivationStage).
void GPT2::wire() {
  const auto& a = acts();
  const CheckpointPlan& plan = checkpoints_.plan();
  tokens_ = a.view("tokens").as<int32_t>();
  targets_ = a.view("targets").as<int32_t>();
  grad_scratch_.clear();
  if (first_) {
    embedding->out = a.data(block_input_entry(plan, 0));
    embedding->dout = a.data("grad.residual");
  }
  const int end = stage_end_ < 0 ? cfg_.n_layer : stage_end_;
  for (int l = stage_begin_; l < end; ++l) wire_block(*blocks[size_t(l)], l);
  if (!last_) return;
  const size_t N = size_t(B_) * size_t(T_);
  ln_f->in = a.data(block_input_entry(plan, cfg_.n_layer));
  ln_f->out = a.data("ln_f.out");
  ln_f->mean = a.view("ln_f.stats").as<float>();
  ln_f->rstd = ln_f->mean + N;
  ln_f->din = a.data("grad.residual");
  ln_f->dout = a.data("grad.ln_f");

  lm_head->in = ln_f->out;
  lm_head->out = a.data("lm_head.out");
  lm_head->din = a.data("grad.ln_f");
  lm_head->dout = lm_head->out;  // dlogits are written in place over the logits

  ce_->logits = lm_head->out;
  ce_->losses = a.view("loss.stats").as<float>();
  ce_->lse = ce_->losses + N;
  if (tp_.parts > 1) {
    ce_->gathered_stats = a.view("loss.shards").as<float>();
    ce_->shard_stats = ce_->gathered_stats + 2 * N * size_t(tp_.index);  // its slot in the gather
  }
  for (const char* g : {"grad.residual", "grad.ln_f"})
    grad_scratch_.emplace_back(a.data(g), a.view(g).bytes());
}

void GPT2::wire_block(Block& b, int layer) {
  const auto& a = acts();
  const CheckpointPlan& plan = checkpoints_.plan();
  void* residual_in = a.data(block_input_entry(plan, layer));
  b.checkpointed = plan.checkpointed(layer);
  b.input_slot = plan.input_on_host(layer) ? residual_in : nullptr;
  b.host_input = plan.input_on_host(layer)
                     ? slots_[size_t(slot_)].host_activations.data(b.name() + ".input")
                     : nullptr;
  // A checkpointed block's internals live in the scratch set all of them share.
  const std::string h = b.checkpointed ? std::string("recompute") : b.name();
  const size_t N = size_t(B_) * size_t(T_);
  void* dresidual = a.data("grad.residual");
  void* dln_1 = a.data("grad.ln_1");
  void* dln_2 = a.data("grad.ln_2");
  void* dqkv = a.data("grad.qkv");
  void* datty = a.data("grad.attn");
  void* dfc = a.data("grad.fc");
  void* dfc_gelu = a.data("grad.fc_gelu");
  void* branch_out = a.data("branch_out");

  b.residual_in = residual_in;
  b.ln_1->in = residual_in;
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

  b.residual_out = a.data(block_input_entry(plan, layer + 1));
  b.branch_out = branch_out;
  b.dresidual = dresidual;
  b.grad_scratch.clear();
  for (const char* g :
       {"grad.ln_1", "grad.ln_2", "grad.qkv", "grad.attn", "grad.fc", "grad.fc_gelu"})
    b.grad_scratch.emplace_back(a.data(g), a.view(g).bytes());
}

void GPT2::forward(ExecutionContext& ctx) {
  const int end = stage_end_ < 0 ? cfg_.n_layer : stage_end_;
  if (first_) ctx.forward(*embedding);
  for (int l = stage_begin_; l < end; ++l) {
    Block& b = *blocks[size_t(l)];
    b.checkpointed ? checkpoints_.forward(ctx, b) : ctx.forward(b);
  }
  if (!last_) return;
  ctx.forward(*ln_f);
  ctx.forward(*lm_head);
  ctx.forward(*ce_);
}

// A stage that is not last starts from the gradient the next stage sent into
// grad.residual; one that is not first leaves its input's gradient there.
void GPT2::backward(ExecutionContext& ctx) {
  const int end = stage_end_ < 0 ? cfg_.n_layer : stage_end_;
  if (last_) {
    for (auto& [ptr, bytes] : grad_scratch_) ctx.backend().zero(ptr, bytes);
    ctx.backward(*ce_);
    ctx.backward(*lm_head);
    ctx.backward(*ln_f);
  }
  for (int l = end - 1; l >= stage_begin_; --l) {
    Block& b = *blocks[size_t(l)];
    b.checkpointed ? checkpoints_.backward(ctx, b) : ctx.backward(b);
  }
  if (first_) ctx.backward(*embedding);
}

namespace {
void enter_backward(const Module& m, std::vector<const Module*>& out) {
  out.push_back(&m);
  for (auto it = m.children().rbegin(); it != m.children().rend(); ++it) enter_backward(**it, out);
}
}  // namespace

// Mirrors backward(): children in reverse, a checkpointed block's recomputation
// (Block::recompute) just before its own backward.
std::vector<const Module*> GPT2::backward_order(const CheckpointPlan& plan) const {
  std::vector<const Module*> out{this};
  for (auto it = children().rbegin(); it != children().rend(); ++it) {
    const auto b = std::find(blocks.begin(), blocks.end(), *it);
    if (b != blocks.end() && plan.checkpointed(int(b - blocks.begin()))) {
      const auto re = (*b)->recompute_order();
      out.insert(out.end(), re.begin(), re.end());
    }
    enter_backward(**it, out);
  }
  return out;
}

std::vector<float> GPT2::initial_parameters(const ModuleTree& tree, uint64_t seed) const {
  std::vector<float> flat(size_t(tree.full_param_count()), 0.0f);
  // Seeded per parameter, so initial values do not depend on layout or world size.
  for (auto* p : tree.params()) {
    float* dst = flat.data() + p->full_offset;
    switch (p->init) {
      case ParamInit::zeros:
        break;
      case ParamInit::ones:
        std::fill(dst, dst + p->full_numel(), 1.0f);
        break;
      case ParamInit::normal: {
        std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(p->id) * 0xBF58476D1CE4E5B9ull);
        std::normal_distribution<float> dist(0.0f, p->init_std);
        int64_t n = p->full_numel();
        if (p == embedding->wte())
          n = int64_t(cfg_.vocab_size) * cfg_.n_embd;  // padded rows stay 0
        for (int64_t i = 0; i < n; ++i) dst[i] = dist(rng);
        break;
      }
    }
  }
  return flat;
}

}  // namespace hybrid::engine
