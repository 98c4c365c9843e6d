#include "engine/zero/zero_runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

namespace hybrid::engine {

using kernels::DType;

MemoryLayout ZeroRuntime::layout(const ZeroSetup& setup, const Partition& part, int state_floats,
                                 bool offloaded) {
  const uint64_t P = uint64_t(part.padded()), S = uint64_t(part.shard_size());
  const uint64_t n_opt = setup.stage == 0 ? P : S;
  MemoryLayout l;
  if (!setup.params_offloaded())  // else in host memory or on NVMe (ParamStore)
    l.add("params", setup.stage == 3 ? S : P, kernels::dtype_size(setup.param_dtype),
          MemCategory::params, true);
  if (!offloaded) {
    // With the partition off the device, fp32 weights need a device copy to update too.
    if (setup.separate_master() || setup.params_offloaded())
      l.add("master", n_opt, 4, MemCategory::master, true);
    if (state_floats > 0)
      l.add("optimizer.state", n_opt * uint64_t(state_floats), 4, MemCategory::optimizer, true);
    // The updated partition on its way from the device optimizer to the ParamStore,
    // only while the optimizer runs (no gathered parameters are live then).
    if (setup.params_offloaded())
      l.add("params.update", S, kernels::dtype_size(setup.param_dtype), MemCategory::params, false,
            Residency::on_demand);
  }
  // Diagnostics only (grads_to_host), never during a training step.
  l.add("grads_to_host.f32", n_opt, 4, MemCategory::other, false, Residency::on_demand);
  return l;
}

ZeroRuntime::ZeroRuntime(const ZeroSetup& setup, const ModuleTree& tree, comm::Communicator& comm,
                         comm::Communicator& host_comm, TrackingAllocator& alloc,
                         TrackingAllocator* offload, int optimizer_state_floats,
                         CommWaitRecorder* waits, std::function<int64_t()> clock,
                         io::AsyncIo::Observer io_observer)
    : setup_(setup),
      tree_(tree),
      part_(tree.param_count(), comm.world_size(), comm.rank()),
      comm_(comm),
      host_comm_(host_comm),
      backend_(alloc.backend()),
      waits_(waits),
      clock_(clock),
      state_floats_(optimizer_state_floats),
      dsize_(kernels::dtype_size(setup.param_dtype)),
      mem_(alloc, layout(setup, part_, optimizer_state_floats,
                         setup.offload_optimizer.device != OffloadDevice::none)) {
  params_ = mem_.view_if_present("params");
  master_ = mem_.view_if_present("master");
  state_ = mem_.view_if_present("optimizer.state");
  const auto& opt_off = setup.offload_optimizer;
  const auto& param_off = setup.offload_param;
  const bool nvme_opt = opt_off.device == OffloadDevice::nvme;
  const bool nvme_params = setup.params_offloaded() && param_off.device == OffloadDevice::nvme;
  if ((setup.params_offloaded() || opt_off.device != OffloadDevice::none) && !offload)
    throw std::invalid_argument("ZeroRuntime: offloading needs a host allocator");
  if (nvme_opt || nvme_params)
    io_ = io::make_async_io(setup.aio, io::choose_io_engine(setup.aio), std::move(io_observer),
                            clock);
  // Unique per process, rank and runtime (a process may hold several engines).
  static std::atomic<int> runtimes{0};
  const std::string prefix = fmt::format("hybrid-{}-r{}-{}-", ::getpid(), comm.rank(), runtimes++);
  auto target = [&](const OffloadConfig& o, const char* block) {
    return io::SwapTarget{o.nvme_path, std::string("zero_optimization.") + block + ".nvme_path",
                          prefix, io_.get()};
  };
  if (offload && opt_off.device != OffloadDevice::none) {
    const int64_t n_opt = setup.stage == 0 ? part_.padded() : part_.shard_size();
    const auto t = target(opt_off, "offload_optimizer");
    offload_ = std::make_unique<OptimizerOffload>(n_opt, state_floats_, setup.accum_dtype,
                                                  setup.param_dtype, backend_, *offload,
                                                  nvme_opt ? &t : nullptr, opt_off.buffer_count);
  }
  if (setup.params_offloaded()) {
    const auto t = target(param_off, "offload_param");
    store_ = std::make_unique<ParamStore>(setup, tree, part_, backend_, *offload,
                                          nvme_params ? &t : nullptr);
  } else {
    device_params_ = std::make_unique<DeviceParams>(backend_, own_params());
  }
  reducer_ = std::make_unique<GradReducer>(setup, tree, part_, comm, alloc, waits, clock);
  if (setup.stage == 3)
    gatherer_ = std::make_unique<ParamGatherer>(setup, tree, part_, comm, alloc, params_.data(),
                                                store_.get(), waits, clock);
}

CategoryBytes ZeroRuntime::nvme_bytes() const {
  CategoryBytes b{};
  for (const auto& part : {offload_ ? offload_->nvme_bytes() : CategoryBytes{},
                           store_ ? store_->nvme_bytes() : CategoryBytes{}})
    for (size_t c = 0; c < b.size(); ++c) b[c] += part[c];
  return b;
}

ParamDestination& ZeroRuntime::param_destination() {
  if (store_) return *store_;
  return *device_params_;
}

ZeroRuntime::~ZeroRuntime() = default;

const void* ZeroRuntime::param(const ParamSpec& p) {
  if (gatherer_) return gatherer_->param(p);
  return params_.as<char>() + size_t(p.offset) * dsize_;
}

void ZeroRuntime::before_forward(const Module& m) {
  if (gatherer_) gatherer_->before(m, true);
}
void ZeroRuntime::after_forward(const Module& m) {
  if (gatherer_) gatherer_->after(m, true);
}
void ZeroRuntime::before_backward(const Module& m) {
  if (gatherer_) gatherer_->before(m, false);
  reducer_->before_module_backward(m);
}
void ZeroRuntime::after_backward(const Module& m) {
  if (gatherer_) gatherer_->after(m, false);
}
void ZeroRuntime::before_recompute(const Module& m) {
  if (gatherer_) gatherer_->before(m, false);
}
void ZeroRuntime::after_recompute(const Module& m) {
  if (gatherer_) gatherer_->after(m, false);
}

void ZeroRuntime::end_forward() {
  if (gatherer_) gatherer_->release_all();
}

void ZeroRuntime::end_backward() {
  reducer_->end_backward();
  if (gatherer_) gatherer_->release_all();
}

GradSummary ZeroRuntime::finish_gradients(std::vector<WeightedRange> weights) {
  reducer_->finish();
  const FlatRange r = reducer_->optimizer_range();
  const size_t asize = kernels::dtype_size(setup_.accum_dtype);
  const char* grads = static_cast<const char*>(reducer_->optimizer_grads());
  GradSummary s;
  auto measure = [&](FlatRange p, double weight) {
    p = p.intersect(r);
    if (p.empty() || weight == 0.0) return;
    const auto stats = backend_.grad_stats(
        setup_.accum_dtype, grads + size_t(p.begin - r.begin) * asize, size_t(p.size()));
    s.sum_squares += weight * stats.sum_squares;
    s.overflow = s.overflow || stats.non_finite;
  };
  // The range in pieces: the weighted ones and the gaps between them at 1.
  std::sort(weights.begin(), weights.end(), [](const WeightedRange& a, const WeightedRange& b) {
    return a.range.begin < b.range.begin;
  });
  int64_t at = r.begin;
  for (const WeightedRange& w : weights) {
    measure({at, w.range.begin}, 1.0);
    measure(w.range, w.weight);
    at = std::max(at, w.range.end);
  }
  measure({at, r.end}, 1.0);
  if (setup_.stage > 0 && comm_.world_size() > 1) {
    // Each rank measured its own shard: one all-reduce agrees on the norm and on
    // overflow (any rank's inf/NaN makes the sum positive).
    // Host values: the host communicator, no device round trip.
    float both[2] = {float(s.sum_squares), s.overflow ? 1.0f : 0.0f};
    const int64_t t0 = clock_();
    host_comm_.all_reduce(both, 2, DType::f32, comm::ReduceOp::sum);
    if (waits_) waits_->record_wait(t0, clock_());
    s.sum_squares = both[0];
    s.overflow = both[1] > 0.0f || !std::isfinite(both[0]);
  }
  return s;
}

void ZeroRuntime::all_reduce_grads(FlatRange range, comm::Communicator& group) {
  const FlatRange r = reducer_->optimizer_range();
  const FlatRange mine = range.intersect(r);
  if (mine.empty() || group.world_size() == 1) return;
  char* grads = static_cast<char*>(reducer_->optimizer_grads());
  const size_t asize = kernels::dtype_size(setup_.accum_dtype);
  const int64_t t0 = clock_();
  group.all_reduce(grads + size_t(mine.begin - r.begin) * asize, size_t(mine.size()),
                   setup_.accum_dtype, comm::ReduceOp::sum);
  if (waits_) waits_->record_wait(t0, clock_());
}

void* ZeroRuntime::own_params() const {
  if (setup_.stage == 0 || setup_.stage == 3) return params_.data();
  return params_.as<char>() + size_t(part_.own().begin) * dsize_;
}

float* ZeroRuntime::master_ptr() const {
  if (!master_.empty()) return master_.as<float>();
  return static_cast<float*>(own_params());  // fp32 parameters are their own master copy
}

void* ZeroRuntime::param_out_ptr() const { return master_.empty() ? nullptr : own_params(); }

void ZeroRuntime::apply_optimizer(Optimizer& opt, OptimizerStepArgs a) {
  const FlatRange r = reducer_->optimizer_range();
  a.first = r.begin;
  a.grad_dtype = setup_.accum_dtype;
  a.grad = reducer_->optimizer_grads();
  auto reduce = [this](std::vector<double>& stats) { reduce_optimizer_stats(stats); };
  if (offload_) {
    // On the host, chunk by chunk: gradients down, updated parameters up.
    offload_->step(opt, a, a.grad, param_destination(), reduce);
  } else {
    a.master = master_ptr();
    a.state = state_.empty() ? nullptr : state_.as<float>();
    a.param_dtype = setup_.param_dtype;
    a.n = size_t(r.size());
    std::vector<double> stats(opt.stats_size(), 0.0);
    if (!stats.empty()) {
      opt.gather_stats(backend_, a, stats.data());
      reduce(stats);
      a.stats = stats.data();
      a.grad = nullptr;  // the second pass reads no gradients
    }
    Buffer update;  // offloaded partition: the device optimizer's output, then to the store
    if (store_) update = mem_.allocate(mem_.layout().index_of("params.update"));
    a.param_out = store_ ? update.data() : param_out_ptr();
    opt.step(backend_, a);
    if (store_) store_->put_from_device(update.data(), a.n * dsize_);
  }
}

// Stage 0 replicates the whole range on every rank: the statistics are already
// complete. Otherwise each rank's partial sums are all-gathered as raw bytes (a
// double is two f32 slots to the communicator, which copies without arithmetic)
// and added in rank order, so every rank gets the same bits.
void ZeroRuntime::reduce_optimizer_stats(std::vector<double>& stats) {
  const int W = host_comm_.world_size();
  if (setup_.stage == 0 || W == 1 || stats.empty()) return;
  const size_t k = stats.size();
  std::vector<double> all(k * size_t(W));
  double* slot = all.data() + k * size_t(host_comm_.rank());
  std::copy(stats.begin(), stats.end(), slot);
  const int64_t t0 = clock_();
  host_comm_.all_gather(slot, all.data(), std::vector<size_t>(size_t(W), 2 * k), DType::f32);
  if (waits_) waits_->record_wait(t0, clock_());
  for (size_t i = 0; i < k; ++i) {
    double sum = 0.0;
    for (int rank = 0; rank < W; ++rank) sum += all[size_t(rank) * k + i];
    stats[i] = sum;
  }
}

void ZeroRuntime::sync_working_params() {
  if (setup_.stage == 1 || setup_.stage == 2) gather_params();
  if (gatherer_) gatherer_->refresh_persistent();
}

void ZeroRuntime::gather_params() {
  if (comm_.world_size() == 1) return;
  const int64_t P = part_.padded();
  const int64_t chunk = std::max<int64_t>(setup_.allgather_bucket_size, 1);
  std::vector<comm::HandlePtr> handles;
  for (int64_t c0 = 0; c0 < P; c0 += chunk) {
    const FlatRange range{c0, std::min(P, c0 + chunk)};
    const FlatRange mine = range.intersect(part_.own());
    char* recv = params_.as<char>() + size_t(range.begin) * dsize_;
    const char* send =
        params_.as<char>() + size_t(mine.empty() ? range.begin : mine.begin) * dsize_;
    handles.push_back(comm_.all_gather_async(send, recv, part_.counts(range), setup_.param_dtype));
  }
  const int64_t t0 = clock_();
  for (auto& h : handles) h->wait();
  if (waits_) waits_->record_wait(t0, clock_());
}

std::vector<float> ZeroRuntime::master_to_host() const {
  if (offload_) return offload_->master();
  const FlatRange r = reducer_->optimizer_range();
  std::vector<float> out(size_t(r.size()));
  backend_.copy_to_host(out.data(), master_ptr(), out.size() * 4);
  return out;
}

std::vector<float> ZeroRuntime::state_to_host() const {
  if (offload_) return offload_->state();
  std::vector<float> out(state_.bytes() / 4);
  if (!out.empty()) backend_.copy_to_host(out.data(), state_.data(), state_.bytes());
  return out;
}

void ZeroRuntime::load_from_host(const float* master, const float* state) {
  const FlatRange r = reducer_->optimizer_range();
  const size_t n = size_t(r.size());
  if (offload_) {
    offload_->load(master, state, param_destination());
    sync_working_params();
    return;
  }
  backend_.copy_from_host(master_ptr(), master, n * 4);
  if (store_) {
    Buffer update = mem_.allocate(mem_.layout().index_of("params.update"));
    backend_.convert(setup_.param_dtype, update.data(), DType::f32, master_ptr(), n);
    store_->put_from_device(update.data(), n * dsize_);
  } else if (!master_.empty()) {
    backend_.convert(setup_.param_dtype, param_out_ptr(), DType::f32, master_ptr(), n);
  }
  if (state && !state_.empty()) backend_.copy_from_host(state_.data(), state, state_.bytes());
  sync_working_params();
}

std::vector<float> ZeroRuntime::grads_to_host() const {
  const size_t n = size_t(reducer_->optimizer_range().size());
  Buffer f32 = mem_.allocate(mem_.layout().index_of("grads_to_host.f32"));
  backend_.convert(DType::f32, f32.data(), setup_.accum_dtype, reducer_->optimizer_grads(), n);
  std::vector<float> out(n);
  backend_.copy_to_host(out.data(), f32.data(), n * 4);
  return out;
}

std::vector<float> ZeroRuntime::full_master() {
  const size_t P = size_t(part_.padded());
  std::vector<float> full = master_to_host();
  if (setup_.stage > 0) {
    // Host values over the host communicator: this rank's shard into its slot,
    // then an in-place all-gather.
    std::vector<float> mine = std::move(full);
    full.assign(P, 0.0f);
    const size_t S = size_t(part_.shard_size());
    float* slot = full.data() + size_t(part_.rank()) * S;
    std::copy(mine.begin(), mine.end(), slot);
    host_comm_.all_gather(slot, full.data(), std::vector<size_t>(size_t(part_.world_size()), S),
                          DType::f32);
  }
  full.resize(size_t(part_.param_count()));
  return full;
}

}  // namespace hybrid::engine
