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
                                      DType param_dtype) {
  const int64_t c = chunk_elements(n);
  const int slots = int(std::min<int64_t>(2, (n + c - 1) / c));
  MemoryLayout l;
  l.add("master", uint64_t(n), 4, MemCategory::master, true);
  if (state_floats > 0)
    l.add("optimizer.state", uint64_t(n) * uint64_t(state_floats), 4, MemCategory::optimizer, true);
  for (int s = 0; s < slots; ++s) {
    l.add(slot_name("grads", s), uint64_t(c), dtype_size(grad_dtype), MemCategory::comm);
    if (param_dtype != DType::f32)
      l.add(slot_name("params", s), uint64_t(c), dtype_size(param_dtype), MemCategory::comm);
  }
  return l;
}

OptimizerOffload::HostBytes OptimizerOffload::host_bytes(int64_t n, int state_floats,
                                                         DType grad_dtype, DType param_dtype) {
  const auto b = layout(n, state_floats, grad_dtype, param_dtype).resident_bytes();
  return {b[size_t(MemCategory::master)], b[size_t(MemCategory::optimizer)],
          b[size_t(MemCategory::comm)]};
}

OptimizerOffload::OptimizerOffload(int64_t n, int state_floats, DType grad_dtype, DType param_dtype,
                                   kernels::Backend& device, TrackingAllocator& host)
    : n_(n),
      state_floats_(state_floats),
      grad_dtype_(grad_dtype),
      param_dtype_(param_dtype),
      device_(device),
      host_(host.backend()),
      chunk_(chunk_elements(n)),
      mem_(host, layout(n, state_floats, grad_dtype, param_dtype)) {
  master_ = mem_.view("master");
  state_ = mem_.view_if_present("optimizer.state");
  for (int s = 0; s < 2; ++s) {
    grad_stage_[size_t(s)] = mem_.view_if_present(slot_name("grads", s));
    param_stage_[size_t(s)] = mem_.view_if_present(slot_name("params", s));
  }
}

void OptimizerOffload::push_params(int64_t k, int slot, void* device_params) {
  const size_t psize = dtype_size(param_dtype_);
  const int64_t off = chunk_begin(k), len = chunk_size(k);
  const void* src = separate_params() ? param_stage_[size_t(slot)].data()
                                      : static_cast<const void*>(master_.as<float>() + off);
  up_[size_t(slot)] = device_.copy_from_host_async(
      static_cast<char*>(device_params) + size_t(off) * psize, src, size_t(len) * psize);
}

void OptimizerOffload::step(Optimizer& opt, OptimizerStepArgs a, const void* device_grads,
                            void* device_params, const StatsReducer& reduce) {
  if (opt.stats_size() == 0) {
    run_chunks(a, device_grads, device_params, [&](OptimizerStepArgs& c) { opt.step(host_, c); });
    return;
  }
  std::vector<double> stats(opt.stats_size(), 0.0);
  run_chunks(a, device_grads, nullptr,
             [&](OptimizerStepArgs& c) { opt.gather_stats(host_, c, stats.data()); });
  reduce(stats);
  a.stats = stats.data();
  run_chunks(a, nullptr, device_params, [&](OptimizerStepArgs& c) { opt.step(host_, c); });
}

void OptimizerOffload::run_chunks(const OptimizerStepArgs& a, const void* device_grads,
                                  void* device_params,
                                  const std::function<void(OptimizerStepArgs&)>& fn) {
  const int64_t K = chunks();
  const size_t gsize = dtype_size(grad_dtype_);
  const char* grads = static_cast<const char*>(device_grads);
  auto fetch = [&](int64_t k) {
    const int slot = int(k % 2);
    down_[size_t(slot)] = device_.copy_to_host_async(grad_stage_[size_t(slot)].data(),
                                                     grads + size_t(chunk_begin(k)) * gsize,
                                                     size_t(chunk_size(k)) * gsize);
  };
  if (grads && K > 0) fetch(0);
  for (int64_t k = 0; k < K; ++k) {
    const int slot = int(k % 2);
    if (grads) {
      // Slot (k+1)%2 held chunk k-1's gradients, which the optimizer has finished with.
      if (k + 1 < K) fetch(k + 1);
      device_.wait_transfer(down_[size_t(slot)]);
    }
    // Chunk k-2's upload read this slot's parameter staging (or its master chunk).
    device_.wait_transfer(up_[size_t(slot)]);
    const int64_t off = chunk_begin(k), len = chunk_size(k);
    OptimizerStepArgs c = a;
    c.first = a.first + off;
    c.grad_dtype = grad_dtype_;
    c.grad = grads ? grad_stage_[size_t(slot)].data() : nullptr;
    c.master = master_.as<float>() + off;
    c.state = state_.empty() ? nullptr : state_.as<float>() + off * state_floats_;
    c.param_dtype = param_dtype_;
    c.param_out = device_params && separate_params() ? param_stage_[size_t(slot)].data() : nullptr;
    c.n = size_t(len);
    fn(c);
    if (device_params) push_params(k, slot, device_params);
  }
  // The host buffers are reused by the next pass; the device already waits on the
  // uploads (stream order), the host waits here.
  for (auto& t : up_) device_.wait_transfer(std::exchange(t, 0));
}

void OptimizerOffload::load(const float* master, const float* state, void* device_params) {
  if (n_ == 0) return;
  std::memcpy(master_.data(), master, size_t(n_) * 4);
  if (!state_.empty()) {
    float* dst = state_.as<float>();
    for (int64_t k = 0; k < chunks(); ++k) {
      const int64_t off = chunk_begin(k), len = chunk_size(k);
      for (int s = 0; s < state_floats_; ++s) {
        float* d = dst + off * state_floats_ + s * len;
        if (state) {
          std::memcpy(d, state + s * n_ + off, size_t(len) * 4);
        } else {
          std::fill(d, d + len, 0.0f);
        }
      }
    }
  }
  for (int64_t k = 0; k < chunks(); ++k) {
    const int slot = int(k % 2);
    device_.wait_transfer(up_[size_t(slot)]);
    if (separate_params())
      host_.convert(param_dtype_, param_stage_[size_t(slot)].data(), DType::f32,
                    master_.as<float>() + chunk_begin(k), size_t(chunk_size(k)));
    push_params(k, slot, device_params);
  }
  for (auto& t : up_) device_.wait_transfer(std::exchange(t, 0));
}

std::vector<float> OptimizerOffload::master() const {
  return std::vector<float>(master_.as<float>(), master_.as<float>() + n_);
}

std::vector<float> OptimizerOffload::state() const {
  std::vector<float> out(size_t(n_) * size_t(state_floats_));
  if (state_.empty()) return out;
  const float* src = state_.as<float>();
  for (int64_t k = 0; k < chunks(); ++k) {
    const int64_t off = chunk_begin(k), len = chunk_size(k);
    for (int s = 0; s < state_floats_; ++s)
      std::memcpy(out.data() + s * n_ + off, src + off * state_floats_ + s * len, size_t(len) * 4);
  }
  return out;
}

}  // namespace hybrid::engine
