#include "autotune/tensor_cost.h"

#include <algorithm>

#include "autotune/pipeline_cost.h"
#include "engine/model/activation_checkpointing.h"
#include "kernels/dtype.h"

namespace hybrid::autotune {

using profiler::CollectiveKind;

namespace {

// The tp collectives of one micro-batch on one pipeline stage.
struct StageCollectives {
  double all_reduces = 0;
  double loss_gathers = 0;
};

// A module's tensor-parallel all-reduces, forward and backward, children included.
double all_reduces(const engine::Module& m) {
  const auto own = m.tp_all_reduces();
  double n = own.forward + own.backward;
  for (const engine::Module* c : m.children()) n += all_reduces(*c);
  return n;
}

// A checkpointed block's recompute repeats the forward all-reduces of the
// layers it runs again (a layer whose output backward does not need is not
// run again: Block::recompute_order).
double recomputed_reductions(const engine::DecoderBlock& b) {
  double n = 0;
  for (const engine::Module* m : b.recompute_order()) n += m->tp_all_reduces().forward;
  return n;
}

std::vector<StageCollectives> stage_collectives(const engine::Config& cfg,
                                                const engine::CausalLM& piece) {
  const int P = std::max(1, cfg.parallel.pipeline_stages);
  const engine::CheckpointPlan plan = engine::checkpoint_plan(cfg);
  const auto parts = piece.partition_stages(P, cfg.parallel.partition);
  std::vector<StageCollectives> out(static_cast<size_t>(P));
  for (int s = 0; s < P; ++s) {
    StageCollectives& c = out[size_t(s)];
    for (int l = parts[size_t(s)].begin; l < parts[size_t(s)].end; ++l)
      c.all_reduces += all_reduces(piece.block(l)) +
                       (plan.checkpointed(l) ? recomputed_reductions(piece.block(l)) : 0.0);
    if (s == 0) c.all_reduces += all_reduces(piece.embedding_module());
    if (s == P - 1) {
      for (const engine::Module* m : piece.head_modules()) c.all_reduces += all_reduces(*m);
      c.loss_gathers = 1;
    }
  }
  return out;
}

}  // namespace

TensorCost tensor_cost(const engine::Config& cfg, const engine::CausalLM& whole,
                       const engine::CausalLM& piece, const ClusterRates& rates) {
  TensorCost c;
  c.tensor = std::max(1, cfg.parallel.tensor);
  if (c.tensor == 1) return c;
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len();
  const double all = subtree_flops(whole, B, T);
  c.compute_share = all > 0 ? subtree_flops(piece, B, T) / all : 1.0;

  // tp ranks are neighbours: their collectives cross the host's own link.
  ClusterRates intra = rates;
  intra.link = "intra_host";
  const double d = double(kernels::dtype_size(cfg.param_dtype()));
  const double act = double(B) * T * cfg.model.n_embd * d;
  const double gathered = double(c.tensor) * 2.0 * B * T * 4.0;  // every rank's 2·B·T floats
  const double t_reduce = intra.collective_s(CollectiveKind::all_reduce, uint64_t(act), c.tensor);
  const double t_gather =
      intra.collective_s(CollectiveKind::all_gather, uint64_t(gathered), c.tensor);
  for (const StageCollectives& s : stage_collectives(cfg, piece)) {
    const double t = s.all_reduces * t_reduce + s.loss_gathers * t_gather;
    if (t < c.per_micro_s) continue;
    c.per_micro_s = t;
    c.all_reduces = s.all_reduces;
    c.loss_gathers = s.loss_gathers;
  }
  c.per_step_s = intra.collective_s(CollectiveKind::all_reduce, 8, c.tensor);
  c.bytes_per_step =
      cfg.gradient_accumulation_steps * (c.all_reduces * act + c.loss_gathers * gathered) + 8.0;
  return c;
}

}  // namespace hybrid::autotune
