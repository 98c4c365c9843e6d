// The stack's generating side (engine/generate/): the key/value cache's layout
// and wiring, and the forward that reads and extends it.
#include <stdexcept>

#include "engine/model/decoder_stack.h"

namespace hybrid::engine {

using kernels::DType;

void DecoderStack::forward_generating(ExecutionContext& ctx) {
  if (!first_ || !last_)
    throw std::logic_error("generation runs the whole model on one stage (no pipeline)");
  ctx.forward(*embedding);
  for (int l = stage_begin_; l < end_block(); ++l) ctx.forward(*blocks_[size_t(l)]);
  // Only the last token of each row is sampled from: its hidden state moves to
  // row b of the final norm's input, and the head runs on B tokens.
  const int B = ctx.B(), T = ctx.T();
  auto* stream = static_cast<char*>(acts().data(block_input_entry(plan(), cfg_.n_layer)));
  const size_t token = size_t(cfg_.n_embd) * kernels::dtype_size(ctx.dtype());
  if (T > 1)
    for (int b = 0; b < B; ++b)  // destinations stay below every later source
      ctx.backend().copy(stream + size_t(b) * token, stream + (size_t(b) * T + T - 1) * token,
                         token);
  ctx.set_shape(B, 1);
  ctx.forward(*final_norm_);
  ctx.forward(*lm_head);
  ctx.set_shape(B, T);
}

const void* DecoderStack::generated_logits() const { return lm_head->out; }

void DecoderStack::wire_kv_cache(const LayoutBuffers* cache) {
  for (int layer = stage_begin_; layer < end_block(); ++layer) {
    PreNormBlock& b = *blocks_[size_t(layer)];
    b.core->k_cache = cache ? cache->data(b.name() + ".cache.k") : nullptr;
    b.core->v_cache = cache ? cache->data(b.name() + ".cache.v") : nullptr;
  }
}

MemoryLayout DecoderStack::kv_cache_layout(int batch, int max_tokens, DType dt) const {
  const uint64_t heads = uint64_t(cfg_.kv_heads() / tp_.parts);
  const uint64_t per_side =
      uint64_t(batch) * heads * uint64_t(max_tokens) * uint64_t(cfg_.n_embd / cfg_.n_head);
  MemoryLayout l;
  for (int layer = stage_begin_; layer < end_block(); ++layer) {
    const std::string& h = blocks_[size_t(layer)]->name();
    for (const char* side : {".cache.k", ".cache.v"})
      l.add(h + side, per_side, kernels::dtype_size(dt), MemCategory::kv_cache, false,
            Residency::resident, h);
  }
  return l;
}

}  // namespace hybrid::engine
