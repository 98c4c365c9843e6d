#include "engine/memory_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "base/units.h"
#include "engine/model/registry.h"
#include "engine/optim/compression_errors.h"
#include "engine/parallel/pipeline_schedule.h"
#include "engine/zero/grad_reducer.h"
#include "engine/zero/optimizer_offload.h"
#include "engine/zero/param_gatherer.h"
#include "engine/zero/param_store.h"
#include "engine/zero/partition.h"
#include "engine/zero/zero_runtime.h"

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

uint64_t MemoryPrediction::nvme_total() const {
  uint64_t t = 0;
  for (auto b : nvme) t += b;
  return t;
}

nlohmann::json MemoryPrediction::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (listed_category(MemCategory(c), bytes[size_t(c)]))
      j[std::string(mem_category_name(MemCategory(c)))] = bytes[size_t(c)];
  j["total"] = total();
  auto space = [&](const char* name, const std::array<uint64_t, kMemCategoryCount>& b, uint64_t t) {
    if (!t) return;
    nlohmann::json h = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c)
      if (listed_category(MemCategory(c), b[size_t(c)]))
        h[std::string(mem_category_name(MemCategory(c)))] = b[size_t(c)];
    h["total"] = t;
    j[name] = h;
  };
  space("host", host, host_total());
  space("nvme", nvme, nvme_total());
  return j;
}

namespace {
std::string categories(const std::array<uint64_t, kMemCategoryCount>& bytes, uint64_t total) {
  std::string s;
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (bytes[size_t(c)])
      s += fmt::format("{}{} {}", s.empty() ? "" : ", ", mem_category_name(MemCategory(c)),
                       base::format_bytes(bytes[size_t(c)]));
  return s + fmt::format(" (total {})", base::format_bytes(total));
}
}  // namespace

std::string MemoryPrediction::to_string() const {
  std::string s = categories(bytes, total());
  if (host_total()) s += "; host " + categories(host, host_total());
  if (nvme_total()) s += "; nvme " + categories(nvme, nvme_total());
  return s;
}

namespace {

// ZeRO-3's peak of gathered, non-persistent parameters (elements): replays the
// gatherer's policy (engine/zero/param_gatherer.cpp) over the recorded order —
// gather the current module's units, prefetch ahead until the prefetch budget is
// spent or max_live would be exceeded, release after use. Unit sizes and
// persistence come from the gatherer's layout (unit i: param_modules()[i]); the
// backward order is the model's, recomputed forwards included.
int64_t stage3_peak_live(const CausalLM& model, const ModuleTree& tree, const ZeroSetup& z,
                         const MemoryLayout& units, const CheckpointPlan& plan) {
  std::vector<int64_t> unit_size(tree.modules().size(), 0);
  std::vector<bool> persistent(tree.modules().size(), false);
  for (size_t i = 0; i < tree.param_modules().size(); ++i) {
    const int id = tree.param_modules()[i]->id();
    unit_size[size_t(id)] = int64_t(units[i].elements);
    persistent[size_t(id)] = units[i].residency == Residency::resident;
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
  std::vector<int> backward;
  for (const Module* m : model.backward_order(plan))
    if (!uses[size_t(m->id())].empty()) backward.push_back(m->id());

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

bool offloaded(const Config& cfg) {
  return cfg.zero.offload_optimizer.device != OffloadDevice::none;
}

}  // namespace

namespace {

// The data-parallel group's size: every pipeline stage keeps the whole flat
// parameter space, ZeRO-partitioned over the ranks of its stage.
int data_parallel_ranks(const Config& cfg, int world_size) {
  const int model_ranks =
      std::max(1, cfg.parallel.pipeline_stages) * std::max(1, cfg.parallel.tensor);
  if (world_size < 1 || world_size % model_ranks != 0)
    throw std::invalid_argument(
        fmt::format("memory model: {} ranks do not divide into pipeline.stages {} × "
                    "tensor_model_parallel_size {}",
                    world_size, cfg.parallel.pipeline_stages, cfg.parallel.tensor));
  return world_size / model_ranks;
}

// Makes `model` the engine's stage `stage` (its own parameters only) and
// returns the activations it lays out.
ActivationStage set_stage(const Config& cfg, CausalLM& model, int stage) {
  const int pp = std::max(1, cfg.parallel.pipeline_stages);
  if (stage < 0 || stage >= pp)
    throw std::invalid_argument(
        fmt::format("memory model: stage {} of pipeline.stages {}", stage, pp));
  if (pp == 1) return {};
  model.set_pipeline_stage(stage, pp, cfg.parallel.partition);
  return {model.stage_begin(), model.stage_end(), model.first_stage(), model.last_stage()};
}

}  // namespace

EngineLayouts engine_layouts(const Config& cfg, int world_size, uint64_t attention_saved_bytes,
                             int stage) {
  const int tp = std::max(1, cfg.parallel.tensor);
  // Every tp rank's pieces are alike.
  const auto model = make_model(cfg.model, cfg.padded_vocab(), {tp, 0});
  const int dp = data_parallel_ranks(cfg, world_size);
  const ActivationStage mine = set_stage(cfg, *model, stage);
  ModuleTree tree(*model);
  const Partition part(tree.param_count(), dp, 0);
  const ZeroSetup z = zero_setup(cfg);
  EngineLayouts l;
  // In the engine's allocation order: runtime, reducer, gatherer, activations.
  l.device.append(
      ZeroRuntime::layout(z, part, optimizer_state_floats(cfg.optimizer), offloaded(cfg)));
  // A 1-bit optimizer's error feedback, exchange and flat buffers, allocated
  // with it (engine/optim/compression_errors.h).
  const std::vector<int64_t> starts = tensor_starts(tree);
  l.device.append(compression_layout(compressed_buffers(cfg.optimizer.type, starts, dp), dp,
                                     compression_flat_floats(cfg.optimizer.type, starts, dp)));
  l.device.append(GradReducer::layout(z, tree, part));
  if (z.stage == 3) l.device.append(ParamGatherer::layout(z, tree));
  const CheckpointPlan plan = checkpoint_plan(cfg);
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len();
  // One activation set per micro-batch the stage holds at once under 1F1B.
  const int slots = in_flight_micro_batches(stage, std::max(1, cfg.parallel.pipeline_stages),
                                            cfg.gradient_accumulation_steps);
  const MemoryLayout acts =
      model->activation_layout(B, T, z.param_dtype, attention_saved_bytes, plan, mine, tp);
  for (int i = 0; i < slots; ++i) l.device.append(acts);
  // Host and NVMe in the engine's order: the offloaded optimizer, the offloaded parameter
  // partition, then activations kept in host memory.
  const int state_floats = optimizer_state_floats(cfg.optimizer);
  if (offloaded(cfg)) {
    const int64_t n_opt = z.stage == 0 ? part.padded() : part.shard_size();
    const bool nvme = z.offload_optimizer.device == OffloadDevice::nvme;
    l.host = OptimizerOffload::layout(n_opt, state_floats, z.accum_dtype, z.param_dtype,
                                      nvme ? z.offload_optimizer.buffer_count : 0);
    if (nvme) l.nvme = OptimizerOffload::nvme_layout(n_opt, state_floats);
  }
  if (z.params_offloaded()) {
    l.host.append(ParamStore::host_layout(z, tree, part));
    l.nvme.append(ParamStore::nvme_layout(z, part));
  }
  const MemoryLayout host_acts = model->host_activation_layout(B, T, z.param_dtype, plan);
  for (int i = 0; i < slots; ++i) l.host.append(host_acts);
  return l;
}

MemoryPrediction predict_stage_memory(const Config& cfg, int world_size, int stage,
                                      uint64_t attention_saved_bytes) {
  const auto layouts = engine_layouts(cfg, world_size, attention_saved_bytes, stage);
  MemoryPrediction m;
  m.bytes = layouts.device.resident_bytes();
  m.host = layouts.host.resident_bytes();
  m.nvme = layouts.nvme.resident_bytes();
  // On-demand buffers on the training path: ZeRO-3's gathered parameters, at
  // their peak. (grads_to_host's copy is a diagnostic outside training steps.)
  // With the partition offloaded and the optimizer on the device, the updated
  // partition passes through the device while no gathered parameters are live.
  if (cfg.zero.stage == 3) {
    const auto model =
        make_model(cfg.model, cfg.padded_vocab(), {std::max(1, cfg.parallel.tensor), 0});
    ModuleTree tree(*model);
    const ZeroSetup z = zero_setup(cfg);
    const uint64_t gathered =
        uint64_t(stage3_peak_live(*model, tree, z, ParamGatherer::layout(z, tree),
                                  checkpoint_plan(cfg))) *
        dtype_size(z.param_dtype);
    const auto update = layouts.device.find("params.update");
    m.bytes[size_t(MemCategory::params)] +=
        std::max(gathered, update ? layouts.device[*update].bytes() : uint64_t(0));
  }
  return m;
}

MemoryPrediction predict_memory(const Config& cfg, int world_size, uint64_t attention_saved_bytes) {
  MemoryPrediction peak;
  for (int s = 0; s < std::max(1, cfg.parallel.pipeline_stages); ++s) {
    const auto m = predict_stage_memory(cfg, world_size, s, attention_saved_bytes);
    if (s == 0 || m.total() > peak.total()) peak = m;
  }
  return peak;
}

namespace {
// A tensor-parallel rank's attention holds its share of the channels and heads.
uint64_t saved_bytes(const Config& cfg, const kernels::Backend& backend) {
  const int tp = std::max(1, cfg.parallel.tensor);
  return backend.attention_saved_bytes(cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu,
                                       cfg.seq_len(), cfg.model.n_embd / tp, cfg.model.n_head / tp);
}
}  // namespace

MemoryPrediction predict_memory(const Config& cfg, int world_size,
                                const kernels::Backend& backend) {
  return predict_memory(cfg, world_size, saved_bytes(cfg, backend));
}

MemoryPrediction predict_stage_memory(const Config& cfg, int world_size, int stage,
                                      const kernels::Backend& backend) {
  return predict_stage_memory(cfg, world_size, stage, saved_bytes(cfg, backend));
}

void check_memory_budget(const Config& cfg, int world_size, int stage,
                         const kernels::Backend& backend) {
  if (cfg.memory_budget == 0) return;
  const MemoryPrediction p = predict_stage_memory(cfg, world_size, stage, backend);
  if (p.total() <= cfg.memory_budget) return;
  const auto largest = std::max_element(p.bytes.begin(), p.bytes.end()) - p.bytes.begin();
  throw OutOfMemoryError(
      fmt::format("out of memory: the memory model predicts {} per rank, over its memory budget "
                  "of {}, the most for {} ({}); nothing was allocated (predicted: {})",
                  base::format_bytes(p.total()), base::format_bytes(cfg.memory_budget),
                  mem_category_name(MemCategory(largest)),
                  base::format_bytes(p.bytes[size_t(largest)]), p.to_string()),
      MemCategory(largest), p.total());
}

uint64_t predict_kv_cache(const ModelConfig& model, const GenerationShape& shape) {
  const uint64_t heads = uint64_t(model.kv_heads() / std::max(1, shape.tensor_parallel));
  const uint64_t head_size = uint64_t(model.n_embd / model.n_head);
  return uint64_t(model.n_layer) * 2 * uint64_t(shape.rows) * heads * uint64_t(shape.max_tokens) *
         head_size * dtype_size(shape.cache_dtype);
}

uint64_t predict_pinned_parameters(const Config& cfg) {
  const auto& he = cfg.hybrid_engine;
  if (cfg.zero.stage != 3 || !he.enabled || !he.pin_parameters || he.inference_tp_size > 1)
    return 0;
  const auto model =
      make_model(cfg.model, cfg.padded_vocab(), {std::max(1, cfg.parallel.tensor), 0});
  ModuleTree tree(*model);
  const MemoryLayout units = ParamGatherer::layout(zero_setup(cfg), tree);
  uint64_t bytes = 0;
  for (size_t i = 0; i < units.size(); ++i)
    if (units[i].residency == Residency::on_demand) bytes += units[i].bytes();
  return bytes;
}

}  // namespace hybrid::engine
