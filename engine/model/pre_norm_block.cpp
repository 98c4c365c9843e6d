#include "engine/model/pre_norm_block.h"

#include "engine/model/execution_context.h"
#include "profiler/flops.h"

namespace hybrid::engine {

void PreNormBlock::forward(ExecutionContext& ctx) {
  auto& be = ctx.backend();
  const size_t n = size_t(ctx.B()) * ctx.T() * C_;
  ctx.forward(*norm_1_);
  ctx.forward(*attention_);
  be.residual_forward(ctx.dtype(), residual_mid, residual_in, branch_out, n);
  ctx.forward(*norm_2_);
  ctx.forward(*mlp_);
  be.residual_forward(ctx.dtype(), residual_out, residual_mid, branch_out, n);
}

void PreNormBlock::backward(ExecutionContext& ctx) {
  for (auto& [ptr, bytes] : grad_scratch) ctx.backend().zero(ptr, bytes);
  ctx.backward(*mlp_);
  ctx.backward(*norm_2_);
  ctx.backward(*attention_);
  ctx.backward(*norm_1_);
}

void PreNormBlock::recompute(ExecutionContext& ctx) {
  ctx.forward(*norm_1_);
  ctx.forward(*attention_);
  ctx.backend().residual_forward(ctx.dtype(), residual_mid, residual_in, branch_out,
                                 size_t(ctx.B()) * ctx.T() * C_);
  ctx.forward(*norm_2_);
  ctx.forward(*mlp_);  // its first recompute_children (Sequential::recompute)
}

uint64_t PreNormBlock::forward_flops(int B, int T) const {
  return 2 * profiler::flops::residual_forward(int64_t(B) * T * C_);
}
uint64_t PreNormBlock::recompute_flops(int B, int T) const {
  return profiler::flops::residual_forward(int64_t(B) * T * C_);
}

std::vector<std::pair<void*, size_t>> entry_buffers(const LayoutBuffers& a,
                                                    const std::vector<std::string>& names) {
  std::vector<std::pair<void*, size_t>> out;
  for (const std::string& name : names) out.emplace_back(a.data(name), a.view(name).bytes());
  return out;
}

}  // namespace hybrid::engine
