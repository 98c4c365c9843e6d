// What a module sees while it runs: the backend, the dtype, the micro-batch
// shape and inputs, and where its parameters and gradients live right now.
// Every module boundary goes through forward()/backward() here, which is where
// ZeRO-3 gathers and releases parameters, gradients are handed to the reducer,
// and the profiler times the module.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/model/module.h"
#include "kernels/ops.h"
#include "profiler/tracer.h"

namespace hybrid::engine {

// Resolves parameter and gradient pointers (ZeRO decides where they are).
class ParamAccess {
 public:
  virtual ~ParamAccess() = default;
  virtual const void* param(const ParamSpec& p) = 0;  // valid inside the module's forward/backward
  virtual void* grad(const ParamSpec& p) = 0;         // valid inside the module's backward
};

// Called at every module boundary (ZeRO-3 gathering, gradient hand-off).
class ModuleHooks {
 public:
  virtual ~ModuleHooks() = default;
  virtual void before_forward(const Module&) {}
  virtual void after_forward(const Module&) {}
  virtual void before_backward(const Module&) {}
  virtual void after_backward(const Module&) {}
  // A forward run again inside the backward pass (activation checkpointing).
  virtual void before_recompute(const Module&) {}
  virtual void after_recompute(const Module&) {}
};

// A generating forward (engine/generate/): each of B rows brings T new tokens,
// row b's at positions start[b] .. start[b] + T − 1; attention appends their
// keys and values to the cache and reads the earlier ones from it, and the
// head computes only each row's last logits.
struct Decoding {
  const int* start = nullptr;                        // host, [B]
  const int32_t* positions = nullptr;                // device, [B·T]: start[b] + t
  int first_row = 0;                                 // the cache row of this call's row 0
  int max_tokens = 0;                                // the cache's positions per row
  kernels::DType cache_dtype = kernels::DType::f32;  // the cache's (any compute dtype's)
};

class ExecutionContext {
 public:
  ExecutionContext(kernels::Backend& backend, kernels::DType dt, int B, int T)
      : backend_(backend), dt_(dt), B_(B), T_(T) {}

  kernels::Backend& backend() const { return backend_; }
  kernels::DType dtype() const { return dt_; }
  int B() const { return B_; }
  int T() const { return T_; }

  // A generating forward runs at its own shape inside the bound buffers
  // (B·T no more than bound); null decoding: training.
  void set_shape(int B, int T) { B_ = B, T_ = T; }
  const Decoding* decoding() const { return decoding_; }
  void set_decoding(const Decoding* d) { decoding_ = d; }

  // Device copies of this micro-batch's tokens and targets ([B,T] int32; a
  // negative target is none: padding), and its positions: each token's in its
  // document when rows pack several (the attention stays inside a document),
  // null when every row is one document (positions 0..T-1). A generating
  // forward's positions are its Decoding's.
  const int32_t* tokens() const { return tokens_; }
  const int32_t* targets() const { return targets_; }
  const int32_t* positions() const { return decoding_ ? decoding_->positions : positions_; }
  void set_batch(const int32_t* tokens, const int32_t* targets,
                 const int32_t* positions = nullptr) {
    tokens_ = tokens;
    targets_ = targets;
    positions_ = positions;
  }
  // d(loss)/d(per-token loss) for this micro-step: loss_scale / (targets·accumulation),
  // targets: the micro-batch's real (non-negative) ones.
  float dloss() const { return dloss_; }
  void set_dloss(float d) { dloss_ = d; }

  const void* param(const ParamSpec& p) { return params_->param(p); }
  void* grad(const ParamSpec& p) { return params_->grad(p); }
  void set_param_access(ParamAccess* a) { params_ = a; }
  void set_hooks(ModuleHooks* h) { hooks_ = h; }
  // Tensor parallelism: the group a sharded module's collectives run over
  // (null without one). The compute thread waits for each of them: `waited`
  // gets each wait's start and end (tracer clock), exposed communication.
  void set_tensor_parallel(comm::Communicator* tp,
                           std::function<void(int64_t, int64_t)> waited = {}) {
    tp_ = tp;
    tp_waited_ = std::move(waited);
  }
  comm::Communicator* tensor_parallel() const { return tp_; }
  // Sums n elements of this context's dtype over the tensor-parallel group (in
  // place; nothing without one).
  void tp_all_reduce(void* buf, size_t n);
  // Every tp rank's `count` fp32 values, in tp order (send may be its own slot).
  void tp_all_gather(const float* send, float* recv, size_t count);

  // Profiling: events per module boundary (names interned once per module).
  void set_tracer(profiler::Tracer* t, const std::vector<Module*>& modules);

  void forward(Module& m);
  void backward(Module& m);
  // Activation checkpointing: m's forward again during backward (Module::recompute).
  // Every module boundary inside it is a recompute boundary: the recompute hooks,
  // and profiler scopes of category recompute.
  void recompute(Module& m);
  bool recomputing() const { return recomputing_; }

 private:
  kernels::Backend& backend_;
  kernels::DType dt_;
  int B_, T_;
  const int32_t* tokens_ = nullptr;
  const int32_t* targets_ = nullptr;
  const int32_t* positions_ = nullptr;
  float dloss_ = 1.0f;
  const Decoding* decoding_ = nullptr;
  bool recomputing_ = false;
  ParamAccess* params_ = nullptr;
  ModuleHooks* hooks_ = nullptr;
  comm::Communicator* tp_ = nullptr;
  std::function<void(int64_t, int64_t)> tp_waited_;
  profiler::Tracer* tracer_ = nullptr;
  std::vector<uint32_t> names_;  // module id → interned name (category tells fwd/bwd)
};

}  // namespace hybrid::engine
