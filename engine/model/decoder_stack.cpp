#include "engine/model/decoder_stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

namespace hybrid::engine {

using kernels::DType;

DecoderStack::DecoderStack(std::string type, const ModelConfig& cfg, int padded_vocab)
    : CausalLM("", std::move(type)), cfg_(cfg), Vp_(padded_vocab) {}

void DecoderStack::set_tensor_slice(TensorSlice tp) {
  if (!slots_.empty())
    throw std::logic_error(
        fmt::format("{}::set_tensor_slice: before bind (it changes every shape)", type()));
  build(tp);
}

void DecoderStack::bind(TrackingAllocator& alloc, int B, int T, DType dt,
                        const CheckpointPlan& plan, TrackingAllocator* host, int slots) {
  if (B == B_ && T == T_ && plan == checkpoints_.plan() && slots == this->slots()) return;
  if (T < 1 || T > cfg_.seq_len)
    throw std::invalid_argument(fmt::format(
        "{}: sequence length {} must be in 1..{} (the block size, hybrid.model.seq_len)", cfg_.type,
        T, cfg_.seq_len));
  if (plan.host_inputs && plan.any() && !host)
    throw std::logic_error("bind: block inputs kept in host memory need a host allocator");
  if (slots < 1) throw std::invalid_argument("bind: at least one activation slot");
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
  for (auto* b : blocks_) b->stream_bytes = stream_bytes();
  use_slot(0);
  assign_activation_bytes(*this, layout);
}

void DecoderStack::use_slot(int slot) {
  if (slot < 0 || slot >= slots())
    throw std::out_of_range(fmt::format("use_slot: slot {} of {}", slot, slots()));
  slot_ = slot;
  wire();
}

size_t DecoderStack::stream_bytes() const {
  return size_t(B_) * size_t(T_) * size_t(cfg_.n_embd) * kernels::dtype_size(dt_);
}

void DecoderStack::set_stage(int begin, int end, bool first, bool last) {
  if (begin < 0 || end > cfg_.n_layer || begin >= end)
    throw std::invalid_argument(
        fmt::format("set_stage: blocks [{}, {}) of {}", begin, end, cfg_.n_layer));
  if (token_embedding_->offset >= 0 || !slots_.empty())
    throw std::logic_error(
        "set_stage: before the ModuleTree (it drops the other stages' parameters)");
  stage_begin_ = begin;
  stage_end_ = end;
  first_ = first;
  last_ = last;
  // Another stage's parameters take no room here; a tied one stays on the last.
  const std::function<void(Module&)> drop = [&](Module& m) {
    for (ParamSpec* p : m.own_params())
      if (!(last && p == tied_)) p->numel = 0;
    for (Module* c : m.children()) drop(*c);
  };
  if (!first) drop(*embedding);
  for (int l = 0; l < cfg_.n_layer; ++l)
    if (l < begin || l >= end) drop(*blocks_[size_t(l)]);
  if (!last)
    for (Module* m : {static_cast<Module*>(final_norm_), static_cast<Module*>(lm_head)}) drop(*m);
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

void DecoderStack::set_pipeline_stage(int stage, int stages, const std::string& method) {
  const auto parts = partition_stages(stages, method);
  if (stage < 0 || stage >= stages)
    throw std::invalid_argument(fmt::format("pipeline stage {} of {}", stage, stages));
  set_stage(parts[size_t(stage)].begin, parts[size_t(stage)].end, stage == 0, stage == stages - 1);
}

std::vector<StageBlocks> DecoderStack::partition_stages(int stages,
                                                        const std::string& method) const {
  int64_t head = 0;
  for (const Module* m : head_modules()) head += subtree_params(*m);
  return partition_blocks(cfg_.n_layer, stages, method, subtree_params(*blocks_.front()),
                          subtree_params(*embedding), head);
}

int64_t DecoderStack::matmul_params() const {
  std::set<const ParamSpec*> weights;
  const std::function<void(const Module&)> visit = [&](const Module& m) {
    if (const auto* linear = dynamic_cast<const Linear*>(&m)) weights.insert(linear->weight());
    for (const Module* c : m.children()) visit(*c);
  };
  visit(*this);
  int64_t n = 0;
  for (const ParamSpec* w : weights) n += w->full_numel();
  return n;
}

void* DecoderStack::stage_input() const {
  return acts().data(block_input_entry(plan(), stage_begin_));
}
const void* DecoderStack::stage_output() const {
  return acts().data(block_input_entry(plan(), end_block()));
}
void* DecoderStack::residual_grad() const { return acts().data("grad.residual"); }

// Only what this stage runs: the others' buffers do not exist (ActivationStage).
void DecoderStack::wire() {
  const auto& a = acts();
  tokens_ = a.view("tokens").as<int32_t>();
  targets_ = a.view("targets").as<int32_t>();
  positions_ = a.view("positions").as<int32_t>();
  head_grad_scratch_.clear();
  wire_ends(a);
  for (int l = stage_begin_; l < end_block(); ++l) wire_block(*blocks_[size_t(l)], l);
}

void DecoderStack::wire_ends(const LayoutBuffers& a) {
  if (first_stage()) {
    embedding->out = a.data(block_input_entry(plan(), 0));
    embedding->dout = a.data("grad.residual");
  }
  if (!last_stage()) return;
  const std::string& n = final_norm_->name();
  final_norm_->wire(a.data(block_input_entry(plan(), cfg_.n_layer)), a.data(n + ".out"),
                    a.data("grad.residual"), a.data("grad." + n));
  final_norm_->wire_stats(a.view(n + ".stats").as<float>(), size_t(B_) * size_t(T_));
  wire_head(a, final_norm_->out, a.data("grad." + n));
  head_grad_scratch_ = entry_buffers(a, {"grad.residual", "grad." + n});
}

void DecoderStack::wire_head(const LayoutBuffers& a, const void* in, void* din) {
  const size_t N = size_t(B_) * size_t(T_);
  void* logits = a.data(lm_head->name() + ".out");
  lm_head->wire(in, logits, din, logits);  // dlogits are written in place over the logits
  loss_->logits = lm_head->out;
  loss_->losses = a.view("loss.stats").as<float>();
  loss_->lse = loss_->losses + N;
  if (tp_.parts > 1) {
    loss_->gathered_stats = a.view("loss.shards").as<float>();
    loss_->shard_stats = loss_->gathered_stats + 2 * N * size_t(tp_.index);  // its gather slot
  }
}

void DecoderStack::wire_block(PreNormBlock& b, int layer) {
  void* residual_in = acts().data(block_input_entry(plan(), layer));
  b.residual_in = residual_in;
  b.checkpointed = plan().checkpointed(layer);
  b.input_slot = plan().input_on_host(layer) ? residual_in : nullptr;
  b.host_input = plan().input_on_host(layer)
                     ? slots_[size_t(slot_)].host_activations.data(b.name() + ".input")
                     : nullptr;
  // A checkpointed block's internals live in the scratch set all of them share.
  b.wire(acts(), b.checkpointed ? std::string("recompute") : b.name(), size_t(B_) * size_t(T_));
  b.residual_out = acts().data(block_input_entry(plan(), layer + 1));
  b.branch_out = acts().data("branch_out");
}

void DecoderStack::forward(ExecutionContext& ctx) {
  if (ctx.decoding()) return forward_generating(ctx);
  if (first_) ctx.forward(*embedding);
  for (int l = stage_begin_; l < end_block(); ++l) {
    DecoderBlock& b = *blocks_[size_t(l)];
    b.checkpointed ? checkpoints_.forward(ctx, b) : ctx.forward(b);
  }
  if (!last_) return;
  ctx.forward(*final_norm_);
  ctx.forward(*lm_head);
  ctx.forward(*loss_);
}

// A stage that is not last starts from the gradient the next stage sent into
// grad.residual; one that is not first leaves its input's gradient there.
void DecoderStack::backward(ExecutionContext& ctx) {
  if (last_) {
    for (auto& [ptr, bytes] : head_grad_scratch_) ctx.backend().zero(ptr, bytes);
    ctx.backward(*loss_);
    ctx.backward(*lm_head);
    ctx.backward(*final_norm_);
  }
  for (int l = end_block() - 1; l >= stage_begin_; --l) {
    DecoderBlock& b = *blocks_[size_t(l)];
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
// (DecoderBlock::recompute_order) just before its own backward.
std::vector<const Module*> DecoderStack::backward_order(const CheckpointPlan& plan) const {
  std::vector<const Module*> out{this};
  for (auto it = children().rbegin(); it != children().rend(); ++it) {
    const auto b = std::find(blocks_.begin(), blocks_.end(), *it);
    if (b != blocks_.end() && plan.checkpointed(int(b - blocks_.begin()))) {
      const auto re = (*b)->recompute_order();
      out.insert(out.end(), re.begin(), re.end());
    }
    enter_backward(**it, out);
  }
  return out;
}

std::vector<float> DecoderStack::initial_parameters(const ModuleTree& tree, uint64_t seed) const {
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
        if (p == token_embedding_ || p == lm_head->weight())
          n = int64_t(cfg_.vocab_size) * cfg_.n_embd;  // padded rows stay 0
        for (int64_t i = 0; i < n; ++i) dst[i] = dist(rng);
        break;
      }
    }
  }
  return flat;
}

void DecoderStack::head_norm_activations(const ActivationSizes& s, const AddActivation& add) const {
  const std::string& n = final_norm_->name();
  add(n + ".out", s.N * s.C, s.d, n);
  add(n + ".stats", uint64_t(final_norm_->stats_per_token()) * s.N, 4, n);
  add("grad." + n, s.N * s.C, s.d, "");
}

MemoryLayout DecoderStack::activation_layout(int B, int T, DType dt, uint64_t attention_saved_bytes,
                                             const CheckpointPlan& plan,
                                             const ActivationStage& stage, int tensor_parts) const {
  const int begin = stage.begin, end = stage.end < 0 ? cfg_.n_layer : stage.end;
  const ActivationSizes z{uint64_t(B) * uint64_t(T), uint64_t(cfg_.n_embd), kernels::dtype_size(dt),
                          uint64_t(tensor_parts), attention_saved_bytes};
  const uint64_t N = z.N, C = z.C, d = z.d;
  MemoryLayout l;
  const AddActivation add = [&](std::string name, uint64_t elements, uint64_t size,
                                std::string owner) {
    l.add(std::move(name), elements, size, MemCategory::activations, false, Residency::resident,
          std::move(owner));
  };
  // Inputs first: the engine copies tokens, targets and (packed documents)
  // positions here (see Engine::micro_forward).
  add("tokens", N, 4, "");
  add("targets", N, 4, "");
  add("positions", N, 4, "");
  // A block's input is the previous block's output (the embedding's for block 0)
  // unless it waits in host memory: then it passes through a device slot.
  auto keeps_input = [&](int layer) {
    return block_input_entry(plan, layer).rfind("checkpoint.slot.", 0) != 0;
  };
  if (keeps_input(0) && stage.first) add(block_input_entry(plan, 0), N * C, d, embedding->name());
  // A later stage receives its input where the previous block would have left it.
  if (keeps_input(begin) && !stage.first) add(block_input_entry(plan, begin), N * C, d, "");
  // Shared by every layer: the branch outputs' scratch and the gradient buffers.
  add("branch_out", N * C, d, "");
  add("grad.residual", N * C, d, "");  // one gradient buffer for the whole residual stream
  shared_activations(z, add);
  // Checkpointed blocks: one set of internals for all of them, rewritten by each
  // block's forward and again by its recomputation in backward.
  if (plan.any()) block_activations("recompute", "", z, add);
  const int slot_end = stage.last ? end : end + 1;  // the output may go to the next stage's slot
  for (int slot = 0; slot < 2; ++slot)
    for (int layer = begin + (begin + slot) % 2; layer < slot_end; layer += 2)
      if (plan.input_on_host(layer)) {
        add("checkpoint.slot." + std::to_string(slot), N * C, d, "");
        break;
      }
  for (int layer = begin; layer < end; ++layer) {
    const std::string& h = blocks_[size_t(layer)]->name();
    if (!plan.checkpointed(layer)) block_activations(h, h, z, add);
    if (keeps_input(layer + 1)) add(block_input_entry(plan, layer + 1), N * C, d, h);
  }
  if (!stage.last) return l;
  head_norm_activations(z, add);
  const uint64_t tp = z.tp;
  add(lm_head->name() + ".out", N * uint64_t(Vp_) / tp, d,
      lm_head->name());                                          // logits, then dlogits in place
  add("loss.stats", 2 * N, 4, loss_->name());                    // per-token losses, log-sum-exp
  if (tp > 1) add("loss.shards", 2 * N * tp, 4, loss_->name());  // every shard's lse, target
  return l;
}

MemoryLayout DecoderStack::host_activation_layout(int B, int T, DType dt,
                                                  const CheckpointPlan& plan) const {
  const uint64_t N = uint64_t(B) * uint64_t(T), C = uint64_t(cfg_.n_embd);
  MemoryLayout l;
  for (int layer = 0; layer < cfg_.n_layer; ++layer)
    if (plan.input_on_host(layer)) {
      const std::string& h = blocks_[size_t(layer)]->name();
      l.add(h + ".input", N * C, kernels::dtype_size(dt), MemCategory::activations, false,
            Residency::resident, h);
    }
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
