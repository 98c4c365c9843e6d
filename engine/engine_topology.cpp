// 3D parallelism's common part in the Engine (issue 16): the process topology
// and its groups, tensor parallelism's model slice, and what every layout
// agrees on across its groups: the gradient norm, the parameters as one whole
// model and the communication counters per group. The pipeline's schedule is
// engine/engine_pipeline.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/engine.h"
#include "engine/parallel/tensor_shards.h"

namespace hybrid {

using namespace engine;

// Before the ModuleTree: tensor parallelism changes the model's shapes.
void Engine::setup_topology() {
  zero_comm_ = device_comm_;
  zero_host_comm_ = host_comm_.get();
  const ParallelConfig& par = cfg_.parallel;
  if (par.tensor == 1 && par.pipeline_stages == 1) return;
  if (backend_->kind() != kernels::BackendKind::cpu || device_comm_ != host_comm_.get())
    throw ConfigError(fmt::format(
        "config: tensor_model_parallel_size {} and pipeline.stages {} run on the CPU backend only "
        "for now (the NCCL groups a GPU needs are not built)",
        par.tensor, par.pipeline_stages));
  topology_ = std::make_unique<Topology>(world_size(), par.tensor, par.pipeline_stages);
  groups_ = make_group_communicators(*host_comm_, *topology_);
  const TopologyCoords me = topology_->coords(rank());
  zero_comm_ = groups_.dp.get();
  zero_host_comm_ = groups_.dp.get();
  groups_.tp->set_group_label("tp");
  groups_.dp->set_group_label("dp");
  groups_.pp->set_group_label("pp");
  for (comm::Communicator* g : {groups_.tp.get(), groups_.dp.get(), groups_.pp.get()})
    g->set_observer(comm_tracer_->observer());
  if (par.pipeline_stages > 1) {
    // The tied embedding's group: the first and the last stage of one pipeline.
    const bool ends = me.pp == 0 || me.pp == par.pipeline_stages - 1;
    const int pipelines = topology_->dp() * topology_->tp();
    tied_comm_ = host_comm_->split(
        ends ? topology_->group_index(ParallelAxis::pp, rank()) : pipelines + rank(), me.pp);
    tied_comm_->set_group_label("tied");
    tied_comm_->set_observer(comm_tracer_->observer());
  }
  if (par.tensor > 1) model_->set_tensor_slice({par.tensor, me.tp});
  log(fmt::format("topology: {} (rank = (pp · dp + dp_index) · tp + tp_index)",
                  topology_->describe()));
  setup_pipeline();
}

std::vector<std::pair<std::string, comm::Communicator::Counters>> Engine::comm_counters_by_group()
    const {
  auto world = host_comm_->counters();
  if (device_comm_ != host_comm_.get()) {
    const auto d = device_comm_->counters();
    for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
      world.calls[k] += d.calls[k], world.bytes[k] += d.bytes[k];
  }
  std::vector<std::pair<std::string, comm::Communicator::Counters>> out{{"world", world}};
  if (!topology_) return out;
  out.emplace_back("dp", groups_.dp->counters());
  if (topology_->tp() > 1) out.emplace_back("tp", groups_.tp->counters());
  if (topology_->pp() == 1) return out;
  out.emplace_back("pp", groups_.pp->counters());
  out.emplace_back("tied", tied_comm_->counters());
  return out;
}

// Each parameter's gradient counts once in the norm: the tied embedding on the
// first stage only, a tensor-parallel replica (layernorms, row-parallel
// biases, wpe) at 1/tp on each of the tp ranks that hold it alike.
GradSummary Engine::gradient_summary() {
  if (!topology_) return zero_->finish_gradients();
  std::vector<WeightedRange> weights;
  if (topology_->tp() > 1)
    for (const ParamSpec* p : tree_->params())
      if (p->shard.replicated())
        weights.push_back({{p->offset, p->offset + p->numel}, 1.0 / topology_->tp()});
  if (topology_->pp() > 1) {
    const ParamSpec& wte = *model_->embedding->wte();
    const FlatRange tied{wte.offset, wte.offset + wte.numel};
    zero_->all_reduce_grads(tied, *tied_comm_);
    if (pipeline_stage() != 0) weights.push_back({tied, 0.0});
  }
  GradSummary g = zero_->finish_gradients(std::move(weights));
  float both[2] = {float(g.sum_squares), g.overflow ? 1.0f : 0.0f};
  for (comm::Communicator* group : {groups_.tp.get(), groups_.pp.get()})
    if (group->world_size() > 1)
      group->all_reduce(both, 2, kernels::DType::f32, comm::ReduceOp::sum);
  return {both[0], both[1] > 0.0f || !std::isfinite(both[0])};
}

// Each rank writes the pieces its tp group holds into the whole model; the
// stages' are summed, the tied wte counted once (the first stage's).
std::vector<float> Engine::gather_parameters() {
  std::vector<float> mine = zero_->full_master();
  if (!topology_) return mine;
  const int tp = topology_->tp();
  const size_t n = mine.size();
  std::vector<float> pieces(n * size_t(tp));
  groups_.tp->all_gather(mine.data(), pieces.data(), std::vector<size_t>(size_t(tp), n),
                         kernels::DType::f32);
  std::vector<float> whole(size_t(tree_->full_param_count()), 0.0f);
  for (int t = 0; t < tp; ++t) unshard_flat(*tree_, pieces.data() + n * size_t(t), whole.data(), t);
  if (topology_->pp() == 1) return whole;
  if (!model_->first_stage()) {
    const ParamSpec& wte = *model_->embedding->wte();
    std::fill_n(whole.begin() + wte.full_offset, wte.full_numel(), 0.0f);
  }
  groups_.pp->all_reduce(whole.data(), whole.size(), kernels::DType::f32, comm::ReduceOp::sum);
  return whole;
}

void Engine::set_parameters(const std::vector<float>& flat) {
  if (int64_t(flat.size()) != tree_->full_param_count())
    throw std::invalid_argument(fmt::format("set_parameters: expected {} values, got {}",
                                            tree_->full_param_count(), flat.size()));
  const std::vector<float> local = topology_ ? shard_flat(*tree_, flat.data()) : flat;
  const FlatRange r = zero_->optimizer_range();
  std::vector<float> mine(size_t(r.size()), 0.0f);
  for (int64_t i = r.begin; i < std::min(r.end, int64_t(local.size())); ++i)
    mine[size_t(i - r.begin)] = local[size_t(i)];
  std::vector<float> state(size_t(r.size()) * size_t(optimizer_->state_floats_per_param()), 0.0f);
  zero_->load_from_host(mine.data(), state.data());
  zero_->zero_grads();
}

}  // namespace hybrid
