// The device runtime's ranks (issue 16): the process topology, this rank's
// group communicators, the collectives on host values and the communication
// counters per group.
#include <fmt/format.h>

#include <stdexcept>

#include "engine/runtime/device_runtime.h"

namespace hybrid::engine {

void DeviceRuntime::setup_topology(const ParallelConfig& par) {
  if (par.tensor == 1 && par.pipeline_stages == 1) return;
  topology_ = std::make_unique<Topology>(world_size(), par.tensor, par.pipeline_stages);
  split_groups(par);
  log(fmt::format("topology: {} (rank = (pp · dp + dp_index) · tp + tp_index)",
                  topology_->describe()));
}

// Device buffers go through groups of the device communicator (NCCL on a
// GPU), host values through groups of the host one; one set when both are one
// object. Every rank splits in the same order: device tp, dp, pp, then host
// tp, dp, pp, then the tied group.
void DeviceRuntime::split_groups(const ParallelConfig& par) {
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

TopologyCoords DeviceRuntime::coords() const {
  return topology_ ? topology_->coords(rank()) : TopologyCoords{0, rank(), 0};
}

int DeviceRuntime::size(ParallelAxis axis) const {
  if (topology_) return topology_->size(axis);
  return axis == ParallelAxis::dp ? world_size() : 1;
}

comm::Communicator& DeviceRuntime::host_group(ParallelAxis axis) const {
  return (host_groups_.tp ? host_groups_ : groups_).of(axis);
}

comm::Communicator& DeviceRuntime::zero_comm() const {
  return topology_ ? group(ParallelAxis::dp) : *device_comm_;
}

comm::Communicator& DeviceRuntime::zero_host_comm() const {
  return topology_ ? host_group(ParallelAxis::dp) : *host_comm_;
}

comm::Communicator::Counters DeviceRuntime::comm_counters() const {
  comm::Communicator::Counters sum;
  for (const auto& [group, c] : comm_counters_by_group())
    for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
      sum.calls[k] += c.calls[k], sum.bytes[k] += c.bytes[k];
  return sum;
}

std::vector<std::pair<std::string, comm::Communicator::Counters>>
DeviceRuntime::comm_counters_by_group() const {
  auto world = host_comm_->counters();
  if (device_comm_ != host_comm_.get()) world += device_comm_->counters();
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

double DeviceRuntime::mean_over_ranks(double v) {
  if (host_comm_->world_size() == 1) return v;
  float f = float(v);
  host_comm_->all_reduce(&f, 1, kernels::DType::f32, comm::ReduceOp::sum);
  return double(f) / host_comm_->world_size();
}

int64_t DeviceRuntime::broadcast_from_rank0(int64_t v) {
  if (host_comm_->world_size() == 1) return v;
  host_comm_->broadcast(&v, sizeof v, 0);
  return v;
}

std::vector<float> DeviceRuntime::all_gather_floats(const std::vector<float>& mine) {
  const size_t n = mine.size(), W = size_t(host_comm_->world_size());
  std::vector<float> all(n * W);
  float* slot = all.data() + n * size_t(host_comm_->rank());
  std::copy(mine.begin(), mine.end(), slot);
  host_comm_->all_gather(slot, all.data(), std::vector<size_t>(W, n), kernels::DType::f32);
  return all;
}

void DeviceRuntime::sum_over_model_groups(float* values, size_t n) {
  if (!topology_) return;
  // The compute thread blocks on these: exposed communication, like every wait.
  for (ParallelAxis a : {ParallelAxis::tp, ParallelAxis::pp})
    if (comm::Communicator& g = host_group(a); g.world_size() > 1)
      comm_tracer_->timed_wait(
          [&] { g.all_reduce(values, n, kernels::DType::f32, comm::ReduceOp::sum); });
}

}  // namespace hybrid::engine
