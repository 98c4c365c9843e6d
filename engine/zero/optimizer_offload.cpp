#include "engine/zero/optimizer_offload.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace hybrid::engine {

using kernels::DType;
using kernels::dtype_size;

namespace {
constexpr int64_t kBlock = 2048;  // kernels/cpu's kChunk: AdamW's inner block
constexpr int64_t kMaxChunk = int64_t(4) << 20;
}  // namespace

int64_t OptimizerOffload::chunk_elements(int64_t n) {
  const int64_t quarter = (n + 3) / 4;
  return std::clamp((quarter + kBlock - 1) / kBlock * kBlock, kBlock, kMaxChunk);
}

namespace {
std::string slot_name(const char* what, int slot) {
  return std::string("staging.") + what + "." + std::to_string(slot);
}
}  // namespace

MemoryLayout OptimizerOffload::layout(int64_t n, int state_floats, DType grad_dtype,
                                      DType param_dtype, int nvme_slots) {
  const int64_t c = chunk_elements(n);
  const int64_t chunks = (n + c - 1) / c;
  const int slots = int(std::min<int64_t>(2, chunks));
  MemoryLayout l;
  if (nvme_slots > 0) {
    for (int s = 0; s < int(std::min<int64_t>(nvme_slots, chunks)); ++s) {
      l.add(slot_name("swap.master", s), uint64_t(c), 4, MemCategory::master);
      if (state_floats > 0)
        l.add(slot_name("swap.state", s), uint64_t(c) * uint64_t(state_floats), 4,
              MemCategory::optimizer);
    }
  } else {
    l.add("master", uint64_t(n), 4, MemCategory::master, true);
    if (state_floats > 0)
      l.add("optimizer.state", uint64_t(n) * uint64_t(state_floats), 4, MemCategory::optimizer,
            true);
  }
  for (int s = 0; s < slots; ++s) {
    l.add(slot_name("grads", s), uint64_t(c), dtype_size(grad_dtype), MemCategory::comm);
    if (param_dtype != DType::f32)
      l.add(slot_name("params", s), uint64_t(c), dtype_size(param_dtype), MemCategory::comm);
  }
  return l;
}

MemoryLayout OptimizerOffload::nvme_layout(int64_t n, int state_floats) {
  MemoryLayout l;
  l.add("optimizer.master", io::swap_elements(uint64_t(n) * 4, 4), 4, MemCategory::master);
  if (state_floats > 0)
    l.add("optimizer.state", io::swap_elements(uint64_t(n) * uint64_t(state_floats) * 4, 4), 4,
          MemCategory::optimizer);
  return l;
}

OptimizerOffload::HostBytes OptimizerOffload::host_bytes(int64_t n, int state_floats,
                                                         DType grad_dtype, DType param_dtype) {
  const auto b = layout(n, state_floats, grad_dtype, param_dtype).resident_bytes();
  return {b[size_t(MemCategory::master)], b[size_t(MemCategory::optimizer)],
          b[size_t(MemCategory::comm)]};
}

OptimizerOffload::OptimizerOffload(int64_t n, int state_floats, DType grad_dtype, DType param_dtype,
                                   kernels::Backend& device, TrackingAllocator& host,
                                   const io::SwapTarget* nvme, int slots)
    : n_(n),
      state_floats_(state_floats),
      grad_dtype_(grad_dtype),
      param_dtype_(param_dtype),
      device_(device),
      host_(host.backend()),
      chunk_(chunk_elements(n)),
      mem_(host, layout(n, state_floats, grad_dtype, param_dtype, nvme ? slots : 0)) {
  master_ = mem_.view_if_present("master");
  state_ = mem_.view_if_present("optimizer.state");
  for (int s = 0; s < 2; ++s) {
    grad_stage_[size_t(s)] = mem_.view_if_present(slot_name("grads", s));
    param_stage_[size_t(s)] = mem_.view_if_present(slot_name("params", s));
  }
  if (nvme) {
    files_ = io::LayoutFiles(*nvme, nvme_layout(n, state_floats));
    for (int s = 0; mem_.layout().find(slot_name("swap.master", s)); ++s) {
      swap_master_.push_back(mem_.view(slot_name("swap.master", s)));
      swap_state_.push_back(mem_.view_if_present(slot_name("swap.state", s)));
    }
    swap_tickets_.assign(swap_master_.size(), {0, 0});
  }
}

float* OptimizerOffload::chunk_master(int64_t k) const {
  if (!on_nvme()) return master_.as<float>() + chunk_begin(k);
  return swap_master_[size_t(k) % swap_master_.size()].as<float>();
}

float* OptimizerOffload::chunk_state(int64_t k) const {
  if (!on_nvme())
    return state_.empty() ? nullptr : state_.as<float>() + chunk_begin(k) * state_floats_;
  return swap_state_[size_t(k) % swap_state_.size()].as<float>();
}

void OptimizerOffload::swap(int64_t k, Swap way) {
  auto& t = swap_tickets_[size_t(k) % swap_tickets_.size()];
  const uint64_t off = uint64_t(chunk_begin(k)), len = uint64_t(chunk_size(k));
  // One file's part of the chunk: `floats` per element, fp32.
  const auto start = [&](const char* file, uint64_t floats, float* slot) {
    const uint64_t at = off * 4 * floats, bytes = len * 4 * floats;
    return way == Swap::in ? files_.io().read(files_.file(file), at, slot, bytes)
                           : files_.io().write(files_.file(file), at, slot, bytes);
  };
  t[0] = start("optimizer.master", 1, chunk_master(k));
  if (state_floats_ > 0) t[1] = start("optimizer.state", uint64_t(state_floats_), chunk_state(k));
}

void OptimizerOffload::wait_swap(int64_t k) {
  if (!on_nvme() || k < 0) return;
  for (auto& t : swap_tickets_[size_t(k) % swap_tickets_.size()])
    files_.io().wait(std::exchange(t, 0));
}

void OptimizerOffload::push_params(int64_t k, int slot, ParamDestination& params) {
  const size_t psize = dtype_size(param_dtype_);
  const int64_t off = chunk_begin(k), len = chunk_size(k);
  const void* src = separate_params() ? param_stage_[size_t(slot)].data()
                                      : static_cast<const void*>(chunk_master(k));
  up_[size_t(slot)] = params.put(uint64_t(off) * psize, src, size_t(len) * psize);
}

void OptimizerOffload::step(Optimizer& opt, OptimizerStepArgs a, const void* device_grads,
                            ParamDestination& params, const StatsReducer& reduce) {
  if (opt.stats_size() == 0) {
    run_chunks(a, device_grads, &params, [&](OptimizerStepArgs& c) { opt.step(host_, c); });
    return;
  }
  std::vector<double> stats(opt.stats_size(), 0.0);
  run_chunks(a, device_grads, nullptr,
             [&](OptimizerStepArgs& c) { opt.gather_stats(host_, c, stats.data()); });
  reduce(stats);
  a.stats = stats.data();
  run_chunks(a, nullptr, &params, [&](OptimizerStepArgs& c) { opt.step(host_, c); });
}

void OptimizerOffload::run_chunks(const OptimizerStepArgs& a, const void* device_grads,
                                  ParamDestination* params,
                                  const std::function<void(OptimizerStepArgs&)>& fn) {
  const int64_t K = chunks();
  const int64_t S = on_nvme() ? int64_t(swap_master_.size()) : 0;
  const size_t gsize = dtype_size(grad_dtype_);
  const char* grads = static_cast<const char*>(device_grads);
  auto fetch = [&](int64_t k) {
    const int slot = int(k % 2);
    down_[size_t(slot)] = device_.copy_to_host_async(grad_stage_[size_t(slot)].data(),
                                                     grads + size_t(chunk_begin(k)) * gsize,
                                                     size_t(chunk_size(k)) * gsize);
  };
  for (int64_t k = 0; k < std::min(S - 1, K); ++k) swap(k, Swap::in);  // read ahead
  if (grads && K > 0) fetch(0);
  for (int64_t k = 0; k < K; ++k) {
    const int slot = int(k % 2);
    if (grads) {
      // Slot (k+1)%2 held chunk k-1's gradients, which the optimizer has finished with.
      if (k + 1 < K) fetch(k + 1);
      device_.wait_transfer(down_[size_t(slot)]);
    }
    // Chunk k-2's upload read this slot's parameter staging (or its master chunk).
    if (params) params->wait_put(std::exchange(up_[size_t(slot)], 0));
    if (S > 0) {
      // Chunk k+S-1 goes into the slot chunk k-1 used, once chunk k-1 is written back
      // and chunk k-1's parameters (fp32: read from that slot) have left.
      // (With one slot, that is chunk k itself.)
      if (k + S - 1 < K) {
        if (params && !separate_params()) params->wait_put(std::exchange(up_[size_t(1 - slot)], 0));
        wait_swap(k - 1);
        swap(k + S - 1, Swap::in);
      }
      wait_swap(k);
    }
    OptimizerStepArgs c = a;
    c.first = a.first + chunk_begin(k);
    c.grad_dtype = grad_dtype_;
    c.grad = grads ? grad_stage_[size_t(slot)].data() : nullptr;
    c.master = chunk_master(k);
    c.state = chunk_state(k);
    c.param_dtype = param_dtype_;
    c.param_out = params && separate_params() ? param_stage_[size_t(slot)].data() : nullptr;
    c.n = size_t(chunk_size(k));
    fn(c);
    if (params) push_params(k, slot, *params);
    // Both passes of a two-pass optimizer change the state: each writes it back.
    if (S > 0) swap(k, Swap::out);
  }
  // The host buffers are reused by the next pass; the device already waits on the
  // uploads (stream order), the host waits here.
  if (params)
    for (auto& t : up_) params->wait_put(std::exchange(t, 0));
  for (int64_t k = std::max<int64_t>(0, K - S); k < K; ++k) wait_swap(k);
}

void OptimizerOffload::load(const float* master, const float* state, ParamDestination& params) {
  if (n_ == 0) return;
  if (!on_nvme()) std::memcpy(master_.data(), master, size_t(n_) * 4);
  for (int64_t k = 0; k < chunks(); ++k) {
    const int slot = int(k % 2);
    const int64_t off = chunk_begin(k), len = chunk_size(k);
    params.wait_put(std::exchange(up_[size_t(slot)], 0));
    wait_swap(k - 1);  // NVMe: this chunk's slot may still be written from (one slot)
    if (on_nvme()) std::memcpy(chunk_master(k), master + off, size_t(len) * 4);
    if (float* d = chunk_state(k)) {
      for (int s = 0; s < state_floats_; ++s) {
        if (state) {
          std::memcpy(d + s * len, state + s * n_ + off, size_t(len) * 4);
        } else {
          std::fill(d + s * len, d + (s + 1) * len, 0.0f);
        }
      }
    }
    if (separate_params())
      host_.convert(param_dtype_, param_stage_[size_t(slot)].data(), DType::f32, chunk_master(k),
                    size_t(len));
    if (on_nvme()) {
      // fp32 parameters come from the slot: they must leave before it is reused.
      push_params(k, slot, params);
      params.wait_put(std::exchange(up_[size_t(slot)], 0));
      swap(k, Swap::out);
      continue;
    }
    push_params(k, slot, params);
  }
  for (auto& t : up_) params.wait_put(std::exchange(t, 0));
  for (int64_t k = 0; k < chunks(); ++k) wait_swap(k);
}

std::vector<float> OptimizerOffload::master() const {
  if (!on_nvme()) return std::vector<float>(master_.as<float>(), master_.as<float>() + n_);
  std::vector<float> out(static_cast<size_t>(n_));
  files_.io().read_sync(files_.file("optimizer.master"), 0, out.data(), out.size() * 4);
  return out;
}

std::vector<float> OptimizerOffload::state() const {
  std::vector<float> out(size_t(n_) * size_t(state_floats_));
  if (out.empty()) return out;
  std::vector<float> chunk_major;
  const float* src = state_.empty() ? nullptr : state_.as<float>();
  if (on_nvme()) {
    chunk_major.resize(out.size());
    files_.io().read_sync(files_.file("optimizer.state"), 0, chunk_major.data(),
                          chunk_major.size() * 4);
    src = chunk_major.data();
  }
  for (int64_t k = 0; k < chunks(); ++k) {
    const int64_t off = chunk_begin(k), len = chunk_size(k);
    for (int s = 0; s < state_floats_; ++s)
      std::memcpy(out.data() + s * n_ + off, src + off * state_floats_ + s * len, size_t(len) * 4);
  }
  return out;
}

}  // namespace hybrid::engine
