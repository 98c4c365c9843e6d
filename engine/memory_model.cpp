#include "engine/memory_model.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "engine/model/gpt2.h"
#include "engine/util/units.h"
#include "engine/zero/bucket_plan.h"
#include "engine/zero/optimizer_offload.h"
#include "engine/zero/partition.h"

namespace hybrid::engine {

using kernels::DType;
using kernels::dtype_size;

uint64_t MemoryPrediction::total() const {
  uint64_t t = 0;
  for (auto b : bytes) t += b;
  return t;
}

uint64_t MemoryPrediction::host_total() const {
  uint64_t t = 0;
  for (auto b : host) t += b;
  return t;
}

nlohmann::json MemoryPrediction::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kMemCategoryCount; ++c) j[std::string(mem_category_name(MemCategory(c)))] = bytes[size_t(c)];
  j["total"] = total();
  if (host_total()) {
    nlohmann::json h = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c) h[std::string(mem_category_name(MemCategory(c)))] = host[size_t(c)];
    h["total"] = host_total();
    j["host"] = h;
  }
  return j;
}

namespace {
std::string categories(const std::array<uint64_t, kMemCategoryCount>& bytes, uint64_t total) {
  std::string s;
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (bytes[size_t(c)])
      s += fmt::format("{}{} {}", s.empty() ? "" : ", ", mem_category_name(MemCategory(c)), format_bytes(bytes[size_t(c)]));
  return s + fmt::format(" (total {})", format_bytes(total));
}
}  // namespace

std::string MemoryPrediction::to_string() const {
  std::string s = categories(bytes, total());
  if (host_total()) s += "; host " + categories(host, host_total());
  return s;
}

namespace {

// ZeRO-3's peak of gathered, non-persistent parameters (elements): replays the
// gatherer's policy (engine/zero/param_gatherer.cpp) over the recorded order —
// gather the current module's units, prefetch ahead until the prefetch budget is
// spent or max_live would be exceeded, release after use.
int64_t stage3_peak_live(const ModuleTree& tree, const Config& cfg) {
  const auto& z = cfg.zero;
  std::vector<int64_t> unit_size(tree.modules().size(), 0);
  std::vector<bool> persistent(tree.modules().size(), false);
  for (auto* m : tree.param_modules()) {
    unit_size[size_t(m->id())] = tree.own_range(*m).size();
    persistent[size_t(m->id())] = unit_size[size_t(m->id())] < z.stage3_param_persistence_threshold;
  }
  std::vector<std::vector<int>> uses(tree.modules().size());
  std::vector<int> forward;
  for (auto* m : tree.modules()) {
    for (auto* p : m->used_params()) {
      auto& u = uses[size_t(m->id())];
      if (std::find(u.begin(), u.end(), p->owner) == u.end()) u.push_back(p->owner);
    }
    if (!uses[size_t(m->id())].empty()) forward.push_back(m->id());
  }
  std::vector<int> backward(forward.rbegin(), forward.rend());

  int64_t peak = 0;
  for (const auto* order : {&forward, &backward}) {
    std::set<int> live;
    int64_t live_elems = 0;
    auto gather = [&](int u) {
      if (persistent[size_t(u)] || live.count(u)) return;
      live.insert(u);
      live_elems += unit_size[size_t(u)];
    };
    for (size_t i = 0; i < order->size(); ++i) {
      for (int u : uses[size_t((*order)[i])]) gather(u);
      int64_t budget = z.stage3_prefetch_bucket_size;
      bool stop = false;
      for (size_t k = i + 1; k < order->size() && budget > 0 && !stop; ++k)
        for (int u : uses[size_t((*order)[k])]) {
          if (persistent[size_t(u)]) continue;
          budget -= unit_size[size_t(u)];
          if (live.count(u)) continue;
          if (live_elems + unit_size[size_t(u)] > z.stage3_max_live_parameters) {
            stop = true;
            break;
          }
          gather(u);
        }
      peak = std::max(peak, live_elems);
      for (int u : uses[size_t((*order)[i])])  // released right after use
        if (live.erase(u)) live_elems -= unit_size[size_t(u)];
    }
  }
  return peak;
}

}  // namespace

MemoryPrediction predict_memory(const Config& cfg, int world_size, uint64_t attention_saved_bytes) {
  GPT2 model(cfg.model, cfg.padded_vocab());
  ModuleTree tree(model);
  const Partition part(tree.param_count(), world_size, 0);
  const int64_t P = part.padded(), S = part.shard_size();
  const auto& z = cfg.zero;
  const DType dt = cfg.param_dtype();
  const uint64_t d = dtype_size(dt), a = dtype_size(cfg.grad_accum_dtype);
  const bool separate_accum = dt != cfg.grad_accum_dtype;
  const int64_t n_opt = z.stage == 0 ? P : S;
  constexpr int kAdamStateFloats = 2;

  MemoryPrediction m;
  auto& b = m.bytes;
  const auto at = [](MemCategory c) { return size_t(c); };

  // Parameters.
  if (z.stage < 3) {
    b[at(MemCategory::params)] = uint64_t(P) * d;
  } else {
    int64_t persistent = 0;
    for (auto* mod : tree.param_modules())
      if (tree.own_range(*mod).size() < z.stage3_param_persistence_threshold) persistent += tree.own_range(*mod).size();
    b[at(MemCategory::params)] = uint64_t(S + persistent + stage3_peak_live(tree, cfg)) * d;
  }
  // Master weights and optimizer state over the optimizer's range: on the
  // device, or (offloaded) in host memory with the transfer staging.
  if (z.offload_optimizer.device != "none") {
    const auto h = OptimizerOffload::host_bytes(n_opt, kAdamStateFloats, cfg.grad_accum_dtype, dt);
    m.host[at(MemCategory::master)] = h.master;
    m.host[at(MemCategory::optimizer)] = h.optimizer;
    m.host[at(MemCategory::comm)] = h.staging;
  } else {
    if (dt != DType::f32) b[at(MemCategory::master)] = uint64_t(n_opt) * 4;
    b[at(MemCategory::optimizer)] = uint64_t(n_opt) * kAdamStateFloats * 4;
  }

  // Gradients and communication buffers (engine/zero/grad_reducer.cpp). The
  // small collectives (loss average, norm/overflow) use host values: no buffers.
  uint64_t comm = 0;
  if (z.stage < 2) {
    b[at(MemCategory::grads)] = uint64_t(P) * d + (separate_accum ? uint64_t(P) * a : 0) +
                                (z.stage == 1 ? uint64_t(S) * a : 0);
  } else {
    b[at(MemCategory::grads)] = uint64_t(S) * a;
    const auto shared = shared_parameters(tree);
    for (auto* p : tree.params())
      if (shared[size_t(p->id)]) comm += uint64_t(p->numel) * d + uint64_t(std::min(p->numel, S)) * d;
    const int64_t cap = reduce_bucket_capacity(tree, z.reduce_bucket_size);
    const uint64_t buckets = z.overlap_comm ? 2 : 1;
    comm += buckets * (uint64_t(cap) * d + uint64_t(std::min(cap, S)) * d);
  }
  b[at(MemCategory::comm)] = comm;

  b[at(MemCategory::activations)] =
      ActivationLayout::gpt2(cfg.model, cfg.padded_vocab(), cfg.train_micro_batch_size_per_gpu,
                             cfg.model.seq_len, dt, attention_saved_bytes)
          .total_bytes();
  return m;
}

MemoryPrediction predict_memory(const Config& cfg, int world_size, const kernels::Backend& backend) {
  return predict_memory(cfg, world_size,
                        backend.attention_saved_bytes(cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu,
                                                      cfg.model.seq_len, cfg.model.n_embd, cfg.model.n_head));
}

}  // namespace hybrid::engine
