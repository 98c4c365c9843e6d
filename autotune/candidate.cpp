#include "autotune/candidate.h"

#include <set>

#include <fmt/format.h>

#include "autotune/tune_error.h"

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
    const std::string part = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
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

// The base config's ZeRO stage, before any axis is applied.
int base_stage(const json& base) {
  if (!base.contains("zero_optimization")) return 0;
  const json& z = base["zero_optimization"];
  if (z.is_boolean()) return z.get<bool>() ? 1 : 0;
  if (z.is_object() && z.contains("stage") && z["stage"].is_number_integer()) return z["stage"].get<int>();
  return 0;
}

std::string stage_list(unsigned mask) {
  std::string s;
  for (int st = 0; st < 4; ++st)
    if ((mask >> st) & 1u) s += (s.empty() ? "" : ", ") + std::to_string(st);
  return s;
}

}  // namespace

Enumeration enumerate_candidates(const json& base_in, const SearchSpace& space, const EnumerateOptions& opts) {
  if (!base_in.is_object()) throw TuneError("config: the base config must be a JSON object");
  const int W = opts.world_size;
  const json base = without_autotuning(base_in);
  Enumeration e;

  // Batch triad policy, decided once for the whole space.
  const bool gas_axis = space.find("gradient_accumulation_steps") != nullptr;
  const bool tbs_axis = space.find("train_batch_size") != nullptr;
  const bool fixed_global = tbs_axis || (!gas_axis && given(base, "train_batch_size"));
  int base_gas = 1;
  try {  // the base config's own resolved accumulation, when it resolves
    base_gas = engine::parse_config(base, W).gradient_accumulation_steps;
  } catch (const engine::ConfigError&) {
  }
  if (fixed_global && !tbs_axis)
    e.notes.push_back(fmt::format("train_batch_size {} is fixed by the config: accumulation derived per micro-batch",
                                  base["train_batch_size"].dump()));

  std::set<std::string> seen;
  std::vector<size_t> idx(space.axes.size(), 0);
  const size_t total = space.grid_size();
  for (size_t n = 0; n < total; ++n) {
    // Mixed-radix counter, last axis fastest.
    size_t rem = n;
    for (size_t a = space.axes.size(); a-- > 0;) {
      idx[a] = rem % space.axes[a].values.size();
      rem /= space.axes[a].values.size();
    }
    auto value_of = [&](std::string_view name) -> const json* {
      for (size_t a = 0; a < space.axes.size(); ++a)
        if (space.axes[a].def->name == name) return &space.axes[a].values[idx[a]];
      return nullptr;
    };
    const json* stage_v = value_of("zero_optimization.stage");
    const int stage = stage_v ? stage_v->get<int>() : base_stage(base);

    json cfg = base;
    std::string extra;  // key parts beyond the batch triad and stage
    bool offload_skipped = false;
    for (size_t a = 0; a < space.axes.size(); ++a) {
      const AxisDef& def = *space.axes[a].def;
      const json& v = space.axes[a].values[idx[a]];
      if (def.short_name == "mbs" || def.short_name == "gas" || def.short_name == "tbs") continue;
      if (!def.applies_at(stage)) continue;
      if ((def.short_name == "offopt" || def.short_name == "offparam") && v != json("none") &&
          !opts.offload_supported) {
        offload_skipped = true;
        break;
      }
      set_path(cfg, def.name, v);
      // Single-valued axes are settings of the whole sweep, not part of the point.
      if (def.short_name != "stage" && space.axes[a].values.size() > 1)
        extra += fmt::format(",{}={}", def.short_name, format_value(v));
    }
    if (offload_skipped) continue;  // one note below, not one drop per point

    const json* mbs_v = value_of("train_micro_batch_size_per_gpu");
    int64_t mbs = 0;
    if (mbs_v) {
      mbs = mbs_v->get<int64_t>();
    } else {
      try {
        mbs = engine::parse_config(base, W).train_micro_batch_size_per_gpu;
      } catch (const engine::ConfigError&) {
        mbs = 1;
      }
    }
    int64_t gas = base_gas;
    std::string reason;
    if (fixed_global) {
      const int64_t tbs = tbs_axis ? value_of("train_batch_size")->get<int64_t>()
                                   : engine::parse_config(base, W).train_batch_size;
      gas = tbs / (mbs * W);
      if (gas < 1)
        reason = fmt::format("train_batch_size {} is smaller than micro-batch {} x {} ranks", tbs, mbs, W);
      else if (tbs % (mbs * W) != 0)
        reason = fmt::format("train_batch_size {} is not a multiple of micro-batch {} x {} ranks", tbs, mbs, W);
    } else if (const json* g = value_of("gradient_accumulation_steps")) {
      gas = g->get<int64_t>();
    }
    const std::string key = fmt::format("mbs={},gas={},stage={}{}", mbs, gas, stage, extra);
    if (!seen.insert(key).second) continue;
    cfg["train_micro_batch_size_per_gpu"] = mbs;
    cfg["gradient_accumulation_steps"] = gas;
    cfg["train_batch_size"] = mbs * gas * W;
    if (reason.empty() && opts.max_train_batch_size && mbs * gas * W > *opts.max_train_batch_size)
      reason = fmt::format("train_batch_size {} is over autotuning.max_train_batch_size {}", mbs * gas * W,
                           *opts.max_train_batch_size);
    if (!reason.empty()) {
      e.dropped.push_back({key, cfg, reason});
      continue;
    }
    Candidate c;
    c.key = key;
    c.world_size = W;
    try {
      c.parsed = engine::parse_config(cfg, W);
    } catch (const engine::ConfigError& err) {
      e.dropped.push_back({key, cfg, err.what()});
      continue;
    }
    c.config = std::move(cfg);
    e.candidates.push_back(std::move(c));
  }
  for (const auto& a : space.axes)
    if ((a.def->short_name == "offopt" || a.def->short_name == "offparam") && !opts.offload_supported &&
        a.values.size() > 1) {
      e.notes.push_back(fmt::format("{}: only \"none\" is tried; the CPU backend keeps everything in host memory, "
                                    "so offloading changes nothing there",
                                    a.def->name));
    }
  for (const auto& a : space.axes)
    if (a.def->stages != 0xF && a.values.size() > 1)
      e.notes.push_back(fmt::format("{} is varied only at ZeRO stage(s) {}", a.def->name, stage_list(a.def->stages)));
  return e;
}

}  // namespace hybrid::autotune
