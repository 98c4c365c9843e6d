#include "autotune/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "autotune/optimizer_axis.h"
#include "autotune/tune_error.h"
#include "base/json_read.h"
#include "base/json_text.h"

namespace hybrid::autotune {

using nlohmann::json;

namespace {

constexpr unsigned kAll = 0xF;
constexpr unsigned kStage3 = 1u << 3;
constexpr size_t kMaxAxisValues = 4096;  // a range this long is a typo, not a plan

AxisDef int_axis(std::string name, std::string short_name, int64_t lo, unsigned stages,
                 std::vector<std::string> aliases) {
  AxisDef a;
  a.name = std::move(name);
  a.short_name = std::move(short_name);
  a.type = AxisType::integer;
  a.lo = lo;
  a.stages = stages;
  a.aliases = std::move(aliases);
  return a;
}

AxisDef bool_axis(std::string name, std::string short_name, unsigned stages) {
  AxisDef a;
  a.name = std::move(name);
  a.short_name = std::move(short_name);
  a.type = AxisType::boolean;
  a.stages = stages;
  return a;
}

AxisDef string_axis(std::string name, std::string short_name, std::vector<std::string> choices,
                    unsigned stages) {
  AxisDef a;
  a.name = std::move(name);
  a.short_name = std::move(short_name);
  a.type = AxisType::string;
  a.choices = std::move(choices);
  a.stages = stages;
  return a;
}

bool is_value_spec(const json& v) {
  return v.is_object() && (v.contains("range") || v.contains("pow2") ||
                           v.contains("powers_of_two") || v.contains("values"));
}

// Space files may nest keys as ds_config.json does ({"zero_optimization": {"stage": [...]}}).
void flatten(const json& obj, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object() && !is_value_spec(it.value()))
      flatten(it.value(), key, out);
    else
      out.emplace_back(key, it.value());
  }
}

json check_value(const AxisDef& def, const json& v, const std::string& where) {
  switch (def.type) {
    case AxisType::integer:
      return json(base::json_integer(v, "space", where, def.lo, def.hi));
    case AxisType::boolean:
      return json(base::json_boolean(v, "space", where));
    case AxisType::string: {
      const std::string s = base::json_string(v, "space", where);
      if (std::find(def.choices.begin(), def.choices.end(), s) == def.choices.end()) {
        std::string list;
        for (const auto& c : def.choices) list += (list.empty() ? "" : ", ") + c;
        base::json_fail("space", where, "one of " + list, v);
      }
      return json(s);
    }
  }
  return v;
}

std::vector<int64_t> integer_pair_or_triple(const AxisDef& def, const json& v,
                                            const std::string& where, bool allow_step) {
  const char* what = allow_step ? "[lo, hi] or [lo, hi, step] with lo <= hi and step >= 1"
                                : "[lo, hi] with lo <= hi";
  if (!v.is_array() || v.size() < 2 || v.size() > (allow_step ? 3u : 2u))
    base::json_fail("space", where, what, v);
  std::vector<int64_t> r;
  for (size_t i = 0; i < v.size(); ++i)
    r.push_back(base::json_integer(v[i], "space", where, i < 2 ? def.lo : 1, def.hi));
  if (r[0] > r[1]) base::json_fail("space", where, what, v);
  return r;
}

std::vector<json> expand(const AxisDef& def, const json& spec, const std::string& key) {
  std::vector<json> out;
  if (spec.is_array()) {
    if (spec.empty()) base::json_fail("space", key, "a non-empty list", spec);
    for (size_t i = 0; i < spec.size(); ++i) out.push_back(check_value(def, spec[i], key));
  } else if (spec.is_object()) {
    if (spec.size() != 1)
      base::json_fail(
          "space", key,
          "one of {\"range\": [lo, hi(, step)]}, {\"pow2\": [lo, hi]}, {\"values\": [...]}", spec);
    // Copied out of the iterator: a structured binding of *items().begin() keeps a
    // reference into a temporary iterator (ASan: stack-use-after-scope).
    const auto first = spec.begin();
    const std::string form = first.key();
    const json& arg = first.value();
    const std::string where = key + "." + form;
    if (form == "values") return expand(def, arg, key);
    if (def.type != AxisType::integer)
      base::json_fail("space", key, "a list of values (ranges are for integer keys)", spec);
    if (form == "range") {
      const auto r = integer_pair_or_triple(def, arg, where, true);
      const int64_t step = r.size() == 3 ? r[2] : 1;
      if (uint64_t((r[1] - r[0]) / step) + 1 > kMaxAxisValues)
        throw TuneError(fmt::format("space: {} has more than {} values", where, kMaxAxisValues));
      // Counted, not `x += step` up to hi: hi may be INT64_MAX (signed overflow).
      const uint64_t count = uint64_t(r[1] - r[0]) / uint64_t(step) + 1;
      for (uint64_t i = 0; i < count; ++i) out.push_back(json(r[0] + int64_t(i) * step));
    } else if (form == "pow2" || form == "powers_of_two") {
      const auto r = integer_pair_or_triple(def, arg, where, false);
      if (r[0] < 1) base::json_fail("space", where, "[lo, hi] with 1 <= lo <= hi", arg);
      for (int64_t x = 1;; x *= 2) {  // stops before doubling past hi (may be INT64_MAX)
        if (x >= r[0]) out.push_back(json(x));
        if (x > r[1] / 2) break;
      }
      if (out.empty())
        throw TuneError(fmt::format("space: {} = {} contains no power of two", where,
                                    base::describe_json(arg)));
    } else {
      base::json_fail("space", key, "one of {\"range\": ...}, {\"pow2\": ...}, {\"values\": ...}",
                      spec);
    }
  } else {
    out.push_back(check_value(def, spec, key));
  }
  std::vector<json> unique;
  for (auto& v : out)
    if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(std::move(v));
  return unique;
}

}  // namespace

const std::vector<AxisDef>& axis_table() {
  static const std::vector<AxisDef> table = [] {
    std::vector<AxisDef> t;
    t.push_back(int_axis("train_micro_batch_size_per_gpu", "mbs", 1, kAll,
                         {"micro_batch", "micro_batch_size"}));
    t.push_back(int_axis("gradient_accumulation_steps", "gas", 1, kAll, {"grad_accum"}));
    t.push_back(int_axis("train_batch_size", "tbs", 1, kAll, {"global_batch"}));
    t.push_back(int_axis("zero_optimization.stage", "stage", 0, kAll, {"zero_stage"}));
    t.back().hi = 3;
    t.push_back(
        int_axis("zero_optimization.reduce_bucket_size", "rbs", 1, kAll, {"reduce_bucket_size"}));
    t.push_back(int_axis("zero_optimization.allgather_bucket_size", "agbs", 1,
                         (1u << 1) | (1u << 2), {"allgather_bucket_size"}));
    t.push_back(bool_axis("zero_optimization.overlap_comm", "overlap", kAll));
    t.back().aliases = {"overlap_comm"};
    t.push_back(
        int_axis("zero_optimization.stage3_prefetch_bucket_size", "prefetch", 1, kStage3,
                 {"zero_optimization.prefetch_bucket_size", "stage3_prefetch_bucket_size"}));
    t.push_back(int_axis(
        "zero_optimization.stage3_param_persistence_threshold", "persist", 0, kStage3,
        {"zero_optimization.param_persistence_threshold", "stage3_param_persistence_threshold"}));
    t.push_back(int_axis("zero_optimization.stage3_max_live_parameters", "maxlive", 1, kStage3,
                         {"zero_optimization.max_live_parameters", "stage3_max_live_parameters"}));
    // nvme needs a path per machine: a deliberate choice, not a search axis.
    t.push_back(string_axis("zero_optimization.offload_optimizer.device", "offopt", {"none", "cpu"},
                            (1u << 1) | (1u << 2) | kStage3));
    t.back().aliases = {"offload_optimizer"};
    t.back().saves_nothing = "none";
    t.push_back(string_axis("zero_optimization.offload_param.device", "offparam", {"none", "cpu"},
                            kStage3));
    t.back().aliases = {"offload_param"};
    t.back().saves_nothing = "none";
    // Recomputation in backward for the activations of every k-th block (0: off).
    t.push_back(int_axis("hybrid.activation_checkpointing.every", "ckpt", 0, kAll,
                         {"activation_checkpointing", "activation_checkpointing.every"}));
    t.back().saves_nothing = 0;
    // Pipeline layouts: P stages of a data-parallel group of world / P ranks
    // (candidate.cpp drops P that do not divide the world, exceed the blocks, or
    // meet ZeRO 2/3, which the engine refuses with a pipeline).
    t.push_back(int_axis("pipeline.stages", "pp", 1, kAll, {"pipeline_stages", "pp"}));
    // Tensor-parallel layouts: tp ranks share every block (Megatron's split);
    // candidate.cpp drops tp that does not divide world / P, the heads or the
    // padded vocabulary, and Lamb with tp > 1, as the engine does.
    t.push_back(int_axis("tensor_model_parallel_size", "tp", 1, kAll,
                         {"tensor_parallel_size", "tensor_model_parallel", "tp"}));
    // The optimizer's communication: plain or 1-bit compressed (autotune/optimizer_axis.h;
    // candidate.cpp translates the params, the engine refuses 1-bit with ZeRO >= 1).
    t.push_back(string_axis("optimizer.type", "opt", optimizer_axis_types(), kAll));
    t.back().aliases = {"optimizer"};
    for (auto& a : t)
      if (a.type == AxisType::integer && a.name != "zero_optimization.stage") a.hi = INT64_MAX;
    for (auto& a : t)  // batch sizes are ints in the engine
      if (a.short_name == "mbs" || a.short_name == "gas" || a.short_name == "tbs") a.hi = INT32_MAX;
    return t;
  }();
  return table;
}

const AxisDef* find_axis(std::string_view name) {
  for (const auto& a : axis_table()) {
    if (a.name == name || a.short_name == name) return &a;
    for (const auto& alias : a.aliases)
      if (alias == name) return &a;
  }
  return nullptr;
}

const Axis* SearchSpace::find(std::string_view name) const {
  for (const auto& a : axes)
    if (a.def->name == name) return &a;
  return nullptr;
}

size_t SearchSpace::grid_size() const {
  size_t n = 1;
  for (const auto& a : axes) n *= a.values.size();
  return n;
}

json SearchSpace::to_json() const {
  json j = json::object();
  for (const auto& a : axes) j[a.def->name] = a.values;
  if (thin_micro_batch_sizes > 0) j["num_tuning_micro_batch_sizes"] = thin_micro_batch_sizes;
  return j;
}

// base's typed reads throw JsonReadError; what the autotuner throws is a TuneError.
SearchSpace parse_space(const json& j) try {
  if (!j.is_object())
    base::json_fail("space", "the top level", "a JSON object of keys to values", j);
  std::vector<std::pair<std::string, json>> entries;
  flatten(j, "", entries);
  std::vector<Axis> found;
  for (const auto& [key, spec] : entries) {
    const AxisDef* def = find_axis(key);
    if (!def && (key == "contig" || key.ends_with("contiguous_gradients")))
      throw TuneError(fmt::format(
          "space: '{}' is not an axis: zero_optimization.contiguous_gradients has no effect "
          "(gradients are always written into contiguous buffers)",
          key));
    if (!def) {
      std::string known;
      for (const auto& a : axis_table()) known += (known.empty() ? "" : ", ") + a.name;
      throw TuneError(fmt::format("space: unknown key '{}' (known: {})", key, known));
    }
    for (const auto& f : found)
      if (f.def == def)
        throw TuneError(
            fmt::format("space: '{}' is given twice (as {} and another spelling)", key, def->name));
    found.push_back({def, expand(*def, spec, key)});
    if (def->short_name == "opt") check_optimizer_axis(found.back().values);
  }
  if (found.empty()) throw TuneError("space: no keys to tune (the file is an empty object)");
  SearchSpace s;
  for (const auto& def : axis_table())
    for (auto& f : found)
      if (f.def == &def) s.axes.push_back(std::move(f));
  if (s.find("gradient_accumulation_steps") && s.find("train_batch_size"))
    throw TuneError(
        "space: give gradient_accumulation_steps or train_batch_size (a fixed global batch from "
        "which "
        "accumulation is derived), not both");
  return s;
} catch (const base::JsonReadError& e) {
  throw TuneError(e.what());
}

SearchSpace load_space(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TuneError(fmt::format("space: cannot open {}: {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = base::parse_json_text(ss.str());
  } catch (const base::JsonTextError& e) {
    throw TuneError(fmt::format("space: {}: {}", path, e.what()));
  }
  try {
    return parse_space(j);
  } catch (const TuneError& e) {
    const std::string msg = e.what();
    throw TuneError(fmt::format("space: {}: {}", path, msg.substr(msg.find(": ") + 2)));
  }
}

SearchSpace default_space(const AutotuningOptions& opts) {
  SearchSpace s;
  Axis mbs{find_axis("train_micro_batch_size_per_gpu"), {}};
  for (int64_t x = 1; x <= opts.max_train_micro_batch_size_per_gpu; x *= 2)
    if (x >= opts.min_train_micro_batch_size_per_gpu) mbs.values.push_back(json(x));
  if (mbs.values.empty()) mbs.values.push_back(json(opts.min_train_micro_batch_size_per_gpu));
  s.axes.push_back(std::move(mbs));
  s.axes.push_back({find_axis("zero_optimization.stage"), {json(0), json(1), json(2), json(3)}});
  s.thin_micro_batch_sizes = opts.num_tuning_micro_batch_sizes;
  s.notes.push_back(
      fmt::format("default space: micro-batch sizes {}..{} (powers of two; {} per stage among "
                  "those that fit) x ZeRO "
                  "stages 0-3",
                  opts.min_train_micro_batch_size_per_gpu, opts.max_train_micro_batch_size_per_gpu,
                  opts.num_tuning_micro_batch_sizes));
  return s;
}

std::string format_value(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace hybrid::autotune
