#include "autotune/pipeline_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "engine/parallel/pipeline_schedule.h"
#include "kernels/dtype.h"

namespace hybrid::autotune {

using profiler::CollectiveKind;

double subtree_flops(const engine::Module& m, int B, int T) {
  double f = double(m.forward_flops(B, T)) + double(m.backward_flops(B, T));
  for (const engine::Module* c : m.children()) f += subtree_flops(*c, B, T);
  return f;
}

namespace {

// The slowest stage's share of one micro-batch's forward and backward FLOPs,
// with the blocks partitioned as the engine does (Engine::setup_pipeline).
double slowest_stage_share(const engine::Config& cfg, const engine::CausalLM& model, int P) {
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len();
  const auto parts = model.partition_stages(P, cfg.parallel.partition);
  double head = 0;
  for (const engine::Module* m : model.head_modules()) head += subtree_flops(*m, B, T);
  const double embedding = subtree_flops(model.embedding_module(), B, T);
  double total = embedding + head, slowest = 0;
  std::vector<double> stage(size_t(P), 0.0);
  for (int s = 0; s < P; ++s)
    for (int l = parts[size_t(s)].begin; l < parts[size_t(s)].end; ++l)
      stage[size_t(s)] += subtree_flops(model.block(l), B, T);
  for (const double x : stage) total += x;
  stage.front() += embedding;
  stage.back() += head;
  for (const double x : stage) slowest = std::max(slowest, x);
  return total > 0 ? slowest / total : 1.0;
}

}  // namespace

PipelineCost pipeline_cost(const engine::Config& cfg, const engine::CausalLM& model, int world,
                           const ClusterRates& rates) {
  PipelineCost c;
  const int P = std::max(1, cfg.parallel.pipeline_stages);
  const int tp = std::max(1, cfg.parallel.tensor);
  const int G = cfg.gradient_accumulation_steps;
  if (world < 1 || world % (P * tp) != 0)
    throw std::invalid_argument(fmt::format(
        "cost model: pipeline.stages {} x tensor_model_parallel_size {} does not divide the {} "
        "ranks",
        P, tp, world));
  c.stages = P;
  c.data_parallel = world / (P * tp);
  c.slots = double(G + P - 1);
  if (P == 1) return c;
  c.stage_share = slowest_stage_share(cfg, model, P);
  // One [B, T, C] tensor per micro-batch each way; a middle stage sends and
  // receives both, an end stage one of each.
  const double d = double(kernels::dtype_size(cfg.param_dtype()));
  const double act =
      double(cfg.train_micro_batch_size_per_gpu) * cfg.seq_len() * cfg.model.n_embd * d;
  c.p2p_s = c.slots * 2.0 * rates.collective_s(CollectiveKind::send, uint64_t(act), 2);
  c.p2p_bytes = (P > 2 ? 4.0 : 2.0) * G * act;
  // The first and last stages reduce the tied parameter's gradient (a
  // tensor-parallel rank its own vocabulary rows); an untied model nothing.
  const engine::ParamSpec* tied = model.tied_parameter();
  c.tied_bytes = tied ? double(tied->numel) * double(kernels::dtype_size(cfg.grad_accum_dtype)) : 0;
  c.tied_s = rates.collective_s(CollectiveKind::all_reduce, uint64_t(c.tied_bytes), 2);
  return c;
}

}  // namespace hybrid::autotune
