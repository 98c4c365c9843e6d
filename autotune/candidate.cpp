#include "autotune/candidate.h"

#include <fmt/format.h>

#include <optional>
#include <set>
#include <string_view>

#include "autotune/optimizer_axis.h"
#include "autotune/tune_error.h"
#include "profiler/tables/trial_config.h"

namespace hybrid::autotune {

using nlohmann::json;

json without_autotuning(const json& config) {
  json j = config;
  if (j.is_object()) j.erase("autotuning");
  return j;
}

void set_path(json& config, const std::string& dotted, const json& value) {
  json* node = &config;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string part =
        dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*node)[part] = value;
      return;
    }
    json& child = (*node)[part];
    // DeepSpeed's deprecated "zero_optimization": true means stage 1.
    if (child.is_boolean()) child = json{{"stage", child.get<bool>() ? 1 : 0}};
    if (!child.is_object()) child = json::object();
    node = &child;
    start = dot + 1;
  }
}

namespace {

bool given(const json& base, const char* key) {
  if (!base.contains(key)) return false;
  const json& v = base[key];
  return !(v.is_null() || (v.is_string() && v.get<std::string>() == "auto"));
}

std::string stage_list(unsigned mask) {
  std::string s;
  for (int st = 0; st < 4; ++st)
    if ((mask >> st) & 1u) s += (s.empty() ? "" : ", ") + std::to_string(st);
  return s;
}

// The batch triad policy, decided once for the whole space.
struct BatchPolicy {
  bool tbs_axis = false;      // train_batch_size is an axis
  bool fixed_global = false;  // the global batch is fixed: accumulation is derived from it
  int base_gas = 1;           // the base config's own resolved accumulation, when it resolves
};

BatchPolicy batch_policy(const json& base, const SearchSpace& space, int W,
                         std::vector<std::string>& notes) {
  BatchPolicy b;
  const bool gas_axis = space.find("gradient_accumulation_steps") != nullptr;
  b.tbs_axis = space.find("train_batch_size") != nullptr;
  b.fixed_global = b.tbs_axis || (!gas_axis && given(base, "train_batch_size"));
  try {
    b.base_gas = engine::parse_config(base, W).gradient_accumulation_steps;
  } catch (const engine::ConfigError&) {
  }
  if (b.fixed_global && !b.tbs_axis)
    notes.push_back(fmt::format(
        "train_batch_size {} is fixed by the config: accumulation derived per micro-batch",
        base["train_batch_size"].dump()));
  return b;
}

// Point n of the grid: one value index per axis (mixed-radix counter, last axis fastest).
struct GridPoint {
  const SearchSpace& space;
  std::vector<size_t> idx;

  GridPoint(const SearchSpace& sp, size_t n) : space(sp), idx(sp.axes.size(), 0) {
    for (size_t a = space.axes.size(); a-- > 0;) {
      idx[a] = n % space.axes[a].values.size();
      n /= space.axes[a].values.size();
    }
  }
  const json& value(size_t a) const { return space.axes[a].values[idx[a]]; }
  const json* value_of(std::string_view name) const {
    for (size_t a = 0; a < space.axes.size(); ++a)
      if (space.axes[a].def->name == name) return &value(a);
    return nullptr;
  }
};

// Sets the point's axes other than the batch triad in cfg and returns the key
// parts they add; nullopt when the point offloads and the backend cannot.
std::optional<std::string> apply_axes(json& cfg, const GridPoint& pt, int stage,
                                      const EnumerateOptions& opts) {
  std::string extra;
  for (size_t a = 0; a < pt.space.axes.size(); ++a) {
    const AxisDef& def = *pt.space.axes[a].def;
    const json& v = pt.value(a);
    if (def.short_name == "mbs" || def.short_name == "gas" || def.short_name == "tbs") continue;
    if (!def.applies_at(stage)) continue;
    if ((def.short_name == "offopt" || def.short_name == "offparam") && v != json("none") &&
        !opts.offload_supported)
      return std::nullopt;
    if (def.short_name == "opt")
      switch_optimizer(cfg, v.get<std::string>());
    else
      set_path(cfg, def.name, v);
    // Single-valued axes are settings of the whole sweep, not part of the point.
    if (def.short_name != "stage" && pt.space.axes[a].values.size() > 1)
      extra += fmt::format(",{}={}", def.short_name, format_value(v));
  }
  return extra;
}

struct Triad {
  int64_t mbs = 0, gas = 1;
  std::string reason;  // why the point is dropped; "" when it is not
};

Triad batch_triad(const json& base, const GridPoint& pt, const BatchPolicy& policy, int W) {
  Triad t;
  if (const json* mbs_v = pt.value_of("train_micro_batch_size_per_gpu")) {
    t.mbs = mbs_v->get<int64_t>();
  } else {
    try {
      t.mbs = engine::parse_config(base, W).train_micro_batch_size_per_gpu;
    } catch (const engine::ConfigError&) {
      t.mbs = 1;
    }
  }
  t.gas = policy.base_gas;
  if (policy.fixed_global) {
    const int64_t tbs = policy.tbs_axis ? pt.value_of("train_batch_size")->get<int64_t>()
                                        : engine::parse_config(base, W).train_batch_size;
    t.gas = tbs / (t.mbs * W);
    if (t.gas < 1)
      t.reason = fmt::format("train_batch_size {} is smaller than micro-batch {} x {} ranks", tbs,
                             t.mbs, W);
    else if (tbs % (t.mbs * W) != 0)
      t.reason = fmt::format("train_batch_size {} is not a multiple of micro-batch {} x {} ranks",
                             tbs, t.mbs, W);
  } else if (const json* g = pt.value_of("gradient_accumulation_steps")) {
    t.gas = g->get<int64_t>();
  }
  return t;
}

// A layout size: the point's axis value, else the base config's integer at
// `key` inside `block` (the top level when block is null), else 1.
int layout_size(const json& base, const GridPoint& pt, const char* axis, const char* block,
                const char* key) {
  if (const json* v = pt.value_of(axis)) return v->get<int>();
  const json* node = &base;
  if (block) node = base.contains(block) && base[block].is_object() ? &base[block] : nullptr;
  return node && node->contains(key) && (*node)[key].is_number_integer() ? (*node)[key].get<int>()
                                                                         : 1;
}

// The base config's model and optimizer, parsed without its layout and batch
// (those vary per point); nullopt when it does not parse (the trial's own
// parse then names what is wrong).
std::optional<engine::Config> model_of(const json& base) {
  json j = base;
  j.erase("tensor_model_parallel_size");
  j.erase("pipeline");
  j.erase("train_batch_size");
  j["train_micro_batch_size_per_gpu"] = 1;
  j["gradient_accumulation_steps"] = 1;
  try {
    return engine::parse_config(j, 1);
  } catch (const engine::ConfigError&) {
    return std::nullopt;
  }
}

// Why a pipeline layout cannot run; "" when it can.
std::string pipeline_reason(const std::optional<engine::Config>& m, int pp, int zero_stage, int W) {
  if (pp == 1) return {};
  if (W % pp != 0) return fmt::format("pipeline.stages {} does not divide the {} ranks", pp, W);
  if (m && pp > m->model.n_layer)
    return fmt::format("pipeline.stages {} is more than the model's {} blocks", pp,
                       m->model.n_layer);
  if (zero_stage >= 2)
    return fmt::format(
        "zero_optimization.stage {} with pipeline.stages {}: the engine runs ZeRO 0/1 only with "
        "a pipeline",
        zero_stage, pp);
  return {};
}

// Why a tensor-parallel layout cannot run (engine/config: Megatron's split
// needs whole heads and equal vocabulary shards; Lamb needs whole tensors).
std::string tensor_reason(const std::optional<engine::Config>& m, int tp, int pp, int W) {
  if (tp == 1) return {};
  if (W % (int64_t(tp) * pp) != 0)
    return pp == 1
               ? fmt::format("tensor_model_parallel_size {} does not divide the {} ranks", tp, W)
               : fmt::format(
                     "tensor_model_parallel_size {} x pipeline.stages {} does not divide the "
                     "{} ranks",
                     tp, pp, W);
  if (!m) return {};
  if (m->model.n_head % tp != 0)
    return fmt::format("tensor_model_parallel_size {} does not divide hybrid.model.n_head {}", tp,
                       m->model.n_head);
  if (m->padded_vocab() % tp != 0)
    return fmt::format("tensor_model_parallel_size {} does not divide the padded vocabulary {}", tp,
                       m->padded_vocab());
  if (m->optimizer.type == "Lamb")
    return fmt::format(
        "optimizer Lamb with tensor_model_parallel_size {}: Lamb's per-tensor trust ratio needs "
        "whole tensors",
        tp);
  return {};
}

void add_space_notes(const SearchSpace& space, const EnumerateOptions& opts,
                     std::vector<std::string>& notes) {
  for (const auto& a : space.axes)
    if ((a.def->short_name == "offopt" || a.def->short_name == "offparam") &&
        !opts.offload_supported && a.values.size() > 1) {
      notes.push_back(fmt::format(
          "{}: only \"none\" is tried; the CPU backend keeps everything in host memory, "
          "so offloading changes nothing there",
          a.def->name));
    }
  for (const auto& a : space.axes)
    if (a.def->memory_saving() && a.values.size() > 1)
      notes.push_back(fmt::format(
          "{} saves memory at the cost of time: values other than {} are tried only for "
          "candidates predicted over the memory budget without them",
          a.def->name, format_value(a.def->saves_nothing)));
  for (const auto& a : space.axes)
    if (a.def->stages != 0xF && a.values.size() > 1)
      notes.push_back(fmt::format("{} is varied only at ZeRO stage(s) {}", a.def->name,
                                  stage_list(a.def->stages)));
}

// Parses the candidate's config as the engine will; why the engine would
// refuse it, "" when it runs.
std::string parse_candidate(Candidate& c, const json& cfg) {
  try {
    c.parsed = engine::parse_config(cfg, c.world_size);
  } catch (const engine::ConfigError& err) {
    return err.what();
  }
  return {};
}

}  // namespace

Enumeration enumerate_candidates(const json& base_in, const SearchSpace& space,
                                 const EnumerateOptions& opts) {
  if (!base_in.is_object()) throw TuneError("config: the base config must be a JSON object");
  const int W = opts.world_size;
  const json base = without_autotuning(base_in);
  Enumeration e;
  const BatchPolicy policy = batch_policy(base, space, W, e.notes);
  const std::optional<engine::Config> model = model_of(base);
  std::set<std::string> seen;
  const size_t total = space.grid_size();
  for (size_t n = 0; n < total; ++n) {
    const GridPoint pt(space, n);
    const json* stage_v = pt.value_of("zero_optimization.stage");
    const int stage =
        stage_v ? stage_v->get<int>() : profiler::read_trial_config(base).zero_stage.value_or(0);
    json cfg = base;
    const auto extra =
        apply_axes(cfg, pt, stage, opts);  // key parts beyond the batch triad and stage
    if (!extra) continue;  // offload without support: one note below, not one drop per point

    const int pp = layout_size(base, pt, "pipeline.stages", "pipeline", "stages");
    const int tp =
        layout_size(base, pt, "tensor_model_parallel_size", nullptr, "tensor_model_parallel_size");
    std::string layout_reason = pipeline_reason(model, pp, stage, W);
    if (layout_reason.empty()) layout_reason = tensor_reason(model, tp, pp, W);
    // The batch triad counts the data-parallel ranks: world / (stages · tp).
    const int dp = layout_reason.empty() ? W / (pp * tp) : W;
    Triad t = batch_triad(base, pt, policy, dp);
    if (t.reason.empty()) t.reason = layout_reason;
    const std::string key = fmt::format("mbs={},gas={},stage={}{}", t.mbs, t.gas, stage, *extra);
    if (!seen.insert(key).second) continue;
    cfg["train_micro_batch_size_per_gpu"] = t.mbs;
    cfg["gradient_accumulation_steps"] = t.gas;
    cfg["train_batch_size"] = t.mbs * t.gas * dp;
    if (t.reason.empty() && opts.max_train_batch_size &&
        t.mbs * t.gas * dp > *opts.max_train_batch_size)
      t.reason = fmt::format("train_batch_size {} is over autotuning.max_train_batch_size {}",
                             t.mbs * t.gas * dp, *opts.max_train_batch_size);
    if (!t.reason.empty()) {
      e.dropped.push_back({key, cfg, t.reason});
      continue;
    }
    Candidate c;
    c.key = key;
    c.world_size = W;
    const std::string refused = parse_candidate(c, cfg);
    if (!refused.empty()) {
      e.dropped.push_back({key, cfg, refused});
      continue;
    }
    c.config = std::move(cfg);
    e.candidates.push_back(std::move(c));
  }
  add_space_notes(space, opts, e.notes);
  return e;
}

}  // namespace hybrid::autotune
