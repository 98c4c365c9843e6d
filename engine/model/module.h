// Modules: a tree of named, addressable units whose forward and backward are
// separate calls. Parameters are declared (ParamSpec), never owned: the engine
// lays every parameter out in one flat index space and ZeRO decides where the
// bytes live, so a module asks the ExecutionContext for its pointers at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hybrid::engine {

class ExecutionContext;

enum class ParamInit : uint8_t { normal, zeros, ones };

// Tensor parallelism (Megatron): which piece of the whole tensor this rank
// holds. dim -1: all of it (replicated over the tensor-parallel group); 0: a
// block of rows (output features, vocabulary); 1: a block of columns (input
// features). Along dim 0 the tensor may stack matrices of `groups` rows each
// (GPT-2's c_attn: q, k, v of n_embd rows; Llama's qkv: n_embd, then the key
// and value heads' rows; its gate_up: two of intermediate_size), each cut
// alike so a rank's rows hold whole heads of each.
struct TensorShard {
  int dim = -1;
  std::vector<int64_t> groups;  // rows of each stacked matrix; empty: one
  int parts = 1;                // tensor_model_parallel_size
  int index = 0;                // this rank's piece
  bool replicated() const { return dim < 0 || parts == 1; }
};

// This rank's place in the tensor-parallel group its modules are cut for.
struct TensorSlice {
  int parts = 1;  // tensor_model_parallel_size
  int index = 0;
};

struct ParamSpec {
  std::string name;                 // full dotted name, "h.3.attn.c_attn.weight"
  std::vector<int64_t> shape;       // this rank's piece
  std::vector<int64_t> full_shape;  // the whole tensor (shape unless sharded)
  TensorShard shard;
  // Elements this rank holds: the piece's, or 0 for a parameter that another
  // pipeline stage holds (GPT2::set_stage).
  int64_t numel = 0;
  int64_t offset = -1;  // first element in the flat parameter space (set by layout)
  // Where the whole tensor starts in the flat space of the unsharded model
  // (equal to offset without tensor parallelism; set by layout).
  int64_t full_offset = -1;
  int64_t full_numel() const;
  ParamInit init = ParamInit::normal;
  float init_std = 0.02f;
  int owner = -1;  // id of the module that declares it (counts it once)
  int id = -1;     // index in the model's parameter list
};

class Module {
 public:
  Module(std::string name, std::string type) : name_(std::move(name)), type_(std::move(type)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  int id() const { return id_; }
  int parent() const { return parent_; }
  int depth() const { return depth_; }

  // Parameters this module declares (owns), and those it uses (owned + tied).
  const std::vector<ParamSpec*>& own_params() const { return own_params_; }
  const std::vector<ParamSpec*>& used_params() const { return used_params_; }
  const std::vector<Module*>& children() const { return children_; }
  int64_t own_param_count() const;

  // Containers run children through ctx.forward/ctx.backward (which applies
  // ZeRO-3 gathering, gradient hand-off and profiling at every module boundary);
  // leaves call backend ops.
  virtual void forward(ExecutionContext& ctx) = 0;
  virtual void backward(ExecutionContext& ctx) = 0;
  // Activation checkpointing: the forward again, in backward, writing what this
  // module's backward reads (ctx.recompute). A module may skip outputs that no
  // backward reads; by default it is the whole forward.
  virtual void recompute(ExecutionContext& ctx) { forward(ctx); }

  // Bytes of activations this module keeps for backward per micro-batch
  // (children included), set when the model binds its buffers.
  uint64_t activation_bytes() const { return activation_bytes_; }
  void set_activation_bytes(uint64_t b) { activation_bytes_ = b; }

  // FLOPs of this module's own ops (children excluded), for the FLOPs profiler.
  virtual uint64_t forward_flops(int B, int T) const {
    (void)B, (void)T;
    return 0;
  }
  virtual uint64_t backward_flops(int B, int T) const {
    (void)B, (void)T;
    return 0;
  }
  virtual uint64_t recompute_flops(int B, int T) const { return forward_flops(B, T); }
  // Whether this module's own FLOPs are multiply-accumulates (a matmul's: two
  // FLOPs each), which the FLOPs profiler counts as MACs too.
  virtual bool multiply_accumulates() const { return false; }

  // Tensor-parallel all-reduces of this module's own forward and backward (a
  // row-parallel layer's output, a column-parallel one's input gradient, a
  // vocabulary-sharded embedding's output), for the cost model.
  struct TpAllReduces {
    int forward = 0, backward = 0;
  };
  virtual TpAllReduces tp_all_reduces() const { return {}; }

  // Backend calls of this module's own forward and backward together,
  // children excluded, for the cost model's per-call overhead: a leaf's one
  // op each way by default, a container's none.
  virtual int own_launches() const { return children_.empty() ? 2 : 0; }

 protected:
  // `shape` is the whole tensor's; a sharded parameter holds shard's piece of it.
  ParamSpec* declare_param(const std::string& local_name, std::vector<int64_t> shape,
                           ParamInit init, float init_std = 0.02f, TensorShard shard = {});
  void use_param(ParamSpec* tied) { used_params_.push_back(tied); }
  // Drops every child (a model rebuilt with other shapes, before its ModuleTree).
  void clear_children() {
    children_.clear();
    owned_children_.clear();
  }
  template <class M, class... Args>
  M* add_child(Args&&... args) {
    auto child = std::make_unique<M>(std::forward<Args>(args)...);
    M* raw = child.get();
    owned_children_.push_back(std::move(child));
    children_.push_back(raw);
    return raw;
  }

 private:
  friend class ModuleTree;
  std::string name_;
  std::string type_;
  int id_ = -1;
  int parent_ = -1;
  int depth_ = 0;
  uint64_t activation_bytes_ = 0;
  std::vector<std::unique_ptr<ParamSpec>> param_storage_;
  std::vector<ParamSpec*> own_params_;
  std::vector<ParamSpec*> used_params_;
  std::vector<std::unique_ptr<Module>> owned_children_;
  std::vector<Module*> children_;
};

// Runs its children in order forward and in reverse backward.
class Sequential final : public Module {
 public:
  using Module::Module;
  template <class M, class... Args>
  M* add(Args&&... args) {
    return add_child<M>(std::forward<Args>(args)...);
  }
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  // The first recompute_children children (all by default): the outputs of the
  // others are read by no backward.
  void recompute(ExecutionContext& ctx) override;
  size_t recompute_children = size_t(-1);
};

// Numbers the modules depth-first (forward order), assigns parameter ids and
// flat offsets in that order, so each module's own parameters are one
// contiguous range and ZeRO can partition and gather flat ranges.
class ModuleTree {
 public:
  explicit ModuleTree(Module& root);

  Module& root() const { return *modules_.front(); }
  const std::vector<Module*>& modules() const { return modules_; }   // by id
  const std::vector<ParamSpec*>& params() const { return params_; }  // by id
  int64_t param_count() const { return param_count_; }
  // The unsharded model's count (param_count() without tensor parallelism).
  int64_t full_param_count() const { return full_param_count_; }

  // [begin, end) flat range of a module's own parameters (empty when none).
  struct Range {
    int64_t begin = 0, end = 0;
    int64_t size() const { return end - begin; }
  };
  Range own_range(const Module& m) const { return own_ranges_[size_t(m.id())]; }

  // Modules that declare parameters, in forward order: the units ZeRO-3 gathers.
  const std::vector<Module*>& param_modules() const { return param_modules_; }

 private:
  void visit(Module& m, int parent, int depth);
  std::vector<Module*> modules_;
  std::vector<ParamSpec*> params_;
  std::vector<Range> own_ranges_;
  std::vector<Module*> param_modules_;
  int64_t param_count_ = 0;
  int64_t full_param_count_ = 0;
};

}  // namespace hybrid::engine
