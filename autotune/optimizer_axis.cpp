#include "autotune/optimizer_axis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "autotune/tune_error.h"
#include "engine/config/optimizer_params.h"

namespace hybrid::autotune {

using nlohmann::json;

namespace {

struct OptimizerTypeInfo {
  const char* name;
  const char* family;
  bool onebit;
  const char* freeze_key;  // the 1-bit types' freeze step; nullptr for the others
  // Steps from the freeze step to the first compressed one, less one:
  // OneBitAdam/OneBitLamb compress after step max(freeze_step, 2), ZeroOneAdam's
  // local steps come after step max(var_freeze_step + 1, 2).
  int freeze_lag;
};

constexpr OptimizerTypeInfo kTypes[] = {
    {"Adam", "Adam", false, nullptr, 0},
    {"AdamW", "Adam", false, nullptr, 0},
    {"OneBitAdam", "Adam", true, "freeze_step", 0},
    {"ZeroOneAdam", "Adam", true, "var_freeze_step", 1},
    {"Lamb", "Lamb", false, nullptr, 0},
    {"OneBitLamb", "Lamb", true, "freeze_step", 0},
};

// The engine accepts the names in any case (DeepSpeed lower-cases them).
const OptimizerTypeInfo* find_type(const std::string& type) {
  for (const auto& t : kTypes) {
    const std::string name = t.name;
    if (name.size() == type.size() &&
        std::equal(name.begin(), name.end(), type.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        }))
      return &t;
  }
  return nullptr;
}

const OptimizerTypeInfo* type_of(const json& cfg) {
  if (!cfg.is_object() || !cfg.contains("optimizer") || !cfg["optimizer"].is_object())
    return nullptr;
  const json& t = cfg["optimizer"].value("type", json());
  return t.is_string() ? find_type(t.get<std::string>()) : nullptr;
}

// The base config's freeze step under either spelling (a 1-bit type switched
// to another keeps its warm-up length).
std::optional<int64_t> given_freeze_step(const json& params) {
  for (const char* key : {"freeze_step", "var_freeze_step"})
    if (params.contains(key) && params[key].is_number_integer()) return params[key].get<int64_t>();
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& optimizer_axis_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : kTypes) v.emplace_back(t.name);
    return v;
  }();
  return names;
}

std::string optimizer_family(const std::string& type) {
  const OptimizerTypeInfo* t = find_type(type);
  return t ? t->family : "";
}

bool is_onebit_type(const std::string& type) {
  const OptimizerTypeInfo* t = find_type(type);
  return t && t->onebit;
}

void check_optimizer_axis(const std::vector<json>& values) {
  for (size_t i = 1; i < values.size(); ++i) {
    const std::string a = values[0].get<std::string>(), b = values[i].get<std::string>();
    if (optimizer_family(a) != optimizer_family(b))
      throw TuneError(fmt::format(
          "space: optimizer.type: {} and {} are different algorithms; the axis varies how one "
          "optimizer communicates (Adam, AdamW, OneBitAdam, ZeroOneAdam; or Lamb, OneBitLamb)",
          a, b));
  }
}

void switch_optimizer(json& cfg, const std::string& type) {
  const OptimizerTypeInfo* to = find_type(type);
  if (!to) throw TuneError(fmt::format("space: optimizer.type: {} is not an axis value", type));
  json& opt = cfg["optimizer"];
  if (!opt.is_object()) opt = json::object();
  json params =
      opt.contains("params") && opt["params"].is_object() ? opt["params"] : json::object();
  const std::optional<int64_t> freeze = given_freeze_step(params);
  const auto& table = engine::optimizer_param_table();
  const auto& mine = table.at(to->name);
  json kept = json::object();
  for (auto it = params.begin(); it != params.end(); ++it) {
    const bool foreign =
        !mine.contains(it.key()) && std::any_of(table.begin(), table.end(), [&](const auto& entry) {
          return entry.second.contains(it.key());
        });
    if (!foreign) kept[it.key()] = it.value();
  }
  if (to->freeze_key && !kept.contains(to->freeze_key))
    kept[to->freeze_key] = freeze.value_or(kDefaultFreezeStep);
  opt["type"] = to->name;
  opt["params"] = std::move(kept);
}

json measured_config(const json& config, int start_profile_step) {
  const OptimizerTypeInfo* t = type_of(config);
  if (!t || !t->onebit) return config;
  // The first compressed step is the one before the window (its one-time work,
  // the errors' allocation, stays out of the measurement).
  const int64_t want = std::max<int64_t>(0, start_profile_step - 2 - t->freeze_lag);
  json j = config;
  json& params = j["optimizer"]["params"];
  if (!params.is_object()) params = json::object();
  const json& given = params.value(t->freeze_key, json());
  const int64_t user = given.is_number_integer() ? given.get<int64_t>() : kDefaultFreezeStep;
  params[t->freeze_key] = std::min(user, want);
  return j;
}

std::string onebit_trial_note(int start_profile_step, int steps) {
  const int first = std::max(start_profile_step - 1, 3);
  if (steps < first)
    return fmt::format(
        "1-bit optimizer trials run {} steps, ending before their first compressed step ({}): "
        "they time the warm-up only (give --steps {} or more)",
        steps, first, first);
  return fmt::format(
      "1-bit optimizer trials compress from step {} (their config's freeze step moved before the "
      "measured window); candidates and the best config keep the user's freeze step",
      first);
}

}  // namespace hybrid::autotune
