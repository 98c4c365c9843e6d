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
  topology_ = std::make_unique<Topology>(world_size(), par.tensor, par.pipeline_stages);
  split_groups();
  zero_comm_ = groups_.dp.get();
  zero_host_comm_ = &host_group(ParallelAxis::dp);
  if (par.tensor > 1) model_->set_tensor_slice({par.tensor, topology_->coords(rank()).tp});
  log(fmt::format("topology: {} (rank = (pp · dp + dp_index) · tp + tp_index)",
                  topology_->describe()));
  setup_pipeline();
}

// Device buffers go through groups of the device communicator (NCCL on a
// GPU), host values through groups of the host one; one set when both are one
// object. Every rank splits in the same order: device tp, dp, pp, then host
// tp, dp, pp, then the tied group.
void Engine::split_groups() {
  const ParallelConfig& par = cfg_.parallel;
  try {
    groups_ = make_group_communicators(*device_comm_, *topology_);
    if (device_comm_ != host_comm_.get())
      host_groups_ = make_group_communicators(*host_comm_, *topology_);
    if (par.pipeline_stages > 1) {
      const SplitArgs tied = topology_->tied_split_args(rank());
      tied_comm_ = device_comm_->split(tied.color, tied.key);
    }
  } catch (const std::logic_error& e) {  // a communicator without split()
    throw ConfigError(fmt::format(
        "config: tensor_model_parallel_size {} and pipeline.stages {} need groups of the {} "
        "communicator: {}",
        par.tensor, par.pipeline_stages, device_comm_->name(), e.what()));
  }
  auto traced = [this](comm::Communicator& g, const char* label) {
    g.set_group_label(label);
    g.set_observer(comm_tracer_->observer());
  };
  for (const GroupCommunicators* set : {&groups_, &host_groups_}) {
    if (!set->tp) continue;
    for (ParallelAxis a : {ParallelAxis::tp, ParallelAxis::dp, ParallelAxis::pp})
      traced(set->of(a), axis_name(a));
  }
  if (tied_comm_) traced(*tied_comm_, "tied");
}

comm::Communicator& Engine::host_group(ParallelAxis axis) const {
  return (host_groups_.tp ? host_groups_ : groups_).of(axis);
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
  auto both = [this](ParallelAxis a) {  // the device and the host group, counted once when one
    auto c = groups_.of(a).counters();
    if (host_groups_.tp) c += host_groups_.of(a).counters();
    return c;
  };
  out.emplace_back("dp", both(ParallelAxis::dp));
  if (topology_->tp() > 1) out.emplace_back("tp", both(ParallelAxis::tp));
  if (topology_->pp() == 1) return out;
  out.emplace_back("pp", both(ParallelAxis::pp));
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
  if (const ParamSpec* t = model_->tied_parameter(); t && topology_->pp() > 1) {
    const FlatRange tied{t->offset, t->offset + t->numel};
    zero_->all_reduce_grads(tied, *tied_comm_);
    if (pipeline_stage() != 0) weights.push_back({tied, 0.0});
  }
  GradSummary g = zero_->finish_gradients(std::move(weights));
  float both[2] = {float(g.sum_squares), g.overflow ? 1.0f : 0.0f};  // host values
  // The compute thread blocks on these: exposed communication, like every wait.
  for (ParallelAxis a : {ParallelAxis::tp, ParallelAxis::pp})
    if (comm::Communicator& group = host_group(a); group.world_size() > 1)
      comm_tracer_->timed_wait(
          [&] { group.all_reduce(both, 2, kernels::DType::f32, comm::ReduceOp::sum); });
  return {both[0], both[1] > 0.0f || !std::isfinite(both[0])};
}

// Each rank writes the pieces its tp group holds into the whole model; the
// stages' are summed, the tied embedding counted once (the first stage's). Host
// vectors: the host communicator's groups.
std::vector<float> Engine::gather_parameters() {
  std::vector<float> mine = zero_->full_master();
  if (!topology_) return mine;
  const int tp = topology_->tp();
  const size_t n = mine.size();
  std::vector<float> pieces(n * size_t(tp));
  host_group(ParallelAxis::tp)
      .all_gather(mine.data(), pieces.data(), std::vector<size_t>(size_t(tp), n),
                  kernels::DType::f32);
  std::vector<float> whole(size_t(tree_->full_param_count()), 0.0f);
  for (int t = 0; t < tp; ++t) unshard_flat(*tree_, pieces.data() + n * size_t(t), whole.data(), t);
  if (topology_->pp() == 1) return whole;
  if (const ParamSpec* t = model_->tied_parameter(); t && !model_->first_stage())
    std::fill_n(whole.begin() + t->full_offset, t->full_numel(), 0.0f);
  host_group(ParallelAxis::pp)
      .all_reduce(whole.data(), whole.size(), kernels::DType::f32, comm::ReduceOp::sum);
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
