#include "engine/model/module.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "engine/model/execution_context.h"

namespace hybrid::engine {

int64_t Module::own_param_count() const {
  int64_t n = 0;
  for (auto* p : own_params_) n += p->numel;
  return n;
}

int64_t ParamSpec::full_numel() const {
  int64_t n = 1;
  for (auto d : full_shape) n *= d;
  return n;
}

ParamSpec* Module::declare_param(const std::string& local_name, std::vector<int64_t> shape,
                                 ParamInit init, float init_std, TensorShard shard) {
  auto spec = std::make_unique<ParamSpec>();
  spec->name = name_.empty() ? local_name : name_ + "." + local_name;
  spec->full_shape = shape;
  if (!shard.replicated()) {
    const auto d = size_t(shard.dim);
    const int64_t extent = d < shape.size() ? shape[d] : 0;
    int64_t stacked = 0;
    bool whole_pieces = true;
    for (int64_t rows : shard.groups) {
      stacked += rows;
      whole_pieces = whole_pieces && rows % shard.parts == 0;
    }
    if (shard.groups.empty()) stacked = extent, whole_pieces = extent % shard.parts == 0;
    if (d >= shape.size() || stacked != extent || !whole_pieces)
      throw std::invalid_argument(fmt::format(
          "{}: dimension {} of {} elements does not split into {} part(s){}", spec->name, shard.dim,
          extent, shard.parts,
          shard.groups.empty() ? "" : fmt::format(" per stacked matrix of {}", shard.groups)));
    shape[d] /= shard.parts;
  }
  spec->shard = shard;
  spec->numel = 1;
  for (auto d : shape) spec->numel *= d;
  spec->shape = std::move(shape);
  spec->init = init;
  spec->init_std = init_std;
  ParamSpec* raw = spec.get();
  param_storage_.push_back(std::move(spec));
  own_params_.push_back(raw);
  used_params_.push_back(raw);
  return raw;
}

void Sequential::forward(ExecutionContext& ctx) {
  for (auto* c : children()) ctx.forward(*c);
}

void Sequential::recompute(ExecutionContext& ctx) {
  const size_t n = std::min(recompute_children, children().size());
  for (size_t i = 0; i < n; ++i) ctx.forward(*children()[i]);
}

void Sequential::backward(ExecutionContext& ctx) {
  for (auto it = children().rbegin(); it != children().rend(); ++it) ctx.backward(**it);
}

ModuleTree::ModuleTree(Module& root) { visit(root, -1, 0); }

void ModuleTree::visit(Module& m, int parent, int depth) {
  m.id_ = int(modules_.size());
  m.parent_ = parent;
  m.depth_ = depth;
  modules_.push_back(&m);
  Range range{param_count_, param_count_};
  for (auto* p : m.own_params_) {
    p->id = int(params_.size());
    p->owner = m.id_;
    p->offset = param_count_;
    p->full_offset = full_param_count_;
    param_count_ += p->numel;
    full_param_count_ += p->full_numel();
    params_.push_back(p);
  }
  range.end = param_count_;
  own_ranges_.push_back(range);
  if (range.size() > 0) param_modules_.push_back(&m);
  for (auto* c : m.children_) visit(*c, m.id_, depth + 1);
}

}  // namespace hybrid::engine
