#include "gui/model/sweep_model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace hybrid::gui {

using nlohmann::json;
using profiler::TrialStatus;

namespace {

const json* at_path(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* v = at_path(j, path);
  if (v && v->is_number()) return v->get<double>();
  return std::nullopt;
}

std::optional<int> int_at(const json& j, std::initializer_list<const char*> path) {
  if (auto v = number_at(j, path)) return int(*v);
  return std::nullopt;
}

bool enabled(const json& j, const char* block) {
  const json* v = at_path(j, {block, "enabled"});
  return v && v->is_boolean() && v->get<bool>();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Times are minimised, everything else (throughput, FLOP/s, MFU) maximised.
bool metric_higher_is_better(std::string_view metric) {
  const std::string m = lower(metric);
  return !(m.find("latency") != std::string::npos || m.find("_ms") != std::string::npos ||
           m.find("time") != std::string::npos || m.find("memory") != std::string::npos);
}

std::optional<double> column_value(const SweepRow& r, SweepColumn c) {
  auto d = [](auto opt) -> std::optional<double> {
    if (opt) return double(*opt);
    return std::nullopt;
  };
  switch (c) {
    case SweepColumn::id: return double(r.trial.id);
    case SweepColumn::micro_batch: return d(r.config.micro_batch);
    case SweepColumn::grad_accum: return d(r.config.grad_accum);
    case SweepColumn::zero_stage: return d(r.config.zero_stage);
    case SweepColumn::reduce_bucket: return r.config.reduce_bucket;
    case SweepColumn::allgather_bucket: return r.config.allgather_bucket;
    case SweepColumn::overlap: return d(r.config.overlap_comm);
    case SweepColumn::metric: return r.trial.metric;
    case SweepColumn::tokens_per_s: return r.trial.tokens_per_s;
    case SweepColumn::latency: return r.trial.latency_ms;
    case SweepColumn::predicted_mem: return d(r.trial.predicted_mem_bytes);
    case SweepColumn::peak_mem: return d(r.trial.peak_mem_bytes);
    case SweepColumn::status: return double(int(r.trial.status));
    case SweepColumn::key:
    case SweepColumn::dtype:
    case SweepColumn::reason: break;
  }
  return std::nullopt;
}

std::optional<std::string> column_text(const SweepRow& r, SweepColumn c) {
  switch (c) {
    case SweepColumn::key: return r.trial.key;
    case SweepColumn::dtype:
      return r.config.dtype.empty() ? std::nullopt : std::optional<std::string>(r.config.dtype);
    case SweepColumn::reason:
      return r.trial.reason.empty() ? std::nullopt : std::optional<std::string>(r.trial.reason);
    default: return std::nullopt;
  }
}

bool is_text_column(SweepColumn c) {
  return c == SweepColumn::key || c == SweepColumn::dtype || c == SweepColumn::reason;
}

}  // namespace

TrialConfig parse_trial_config(std::string_view config_json) {
  TrialConfig c;
  const json j = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return c;
  c.micro_batch = int_at(j, {"train_micro_batch_size_per_gpu"});
  c.grad_accum = int_at(j, {"gradient_accumulation_steps"});
  c.zero_stage = int_at(j, {"zero_optimization", "stage"});
  c.reduce_bucket = number_at(j, {"zero_optimization", "reduce_bucket_size"});
  c.allgather_bucket = number_at(j, {"zero_optimization", "allgather_bucket_size"});
  if (const json* v = at_path(j, {"zero_optimization", "overlap_comm"}); v && v->is_boolean())
    c.overlap_comm = v->get<bool>();
  if (enabled(j, "bf16"))
    c.dtype = "bf16";
  else if (enabled(j, "fp16"))
    c.dtype = "fp16";
  else if (j.contains("bf16") || j.contains("fp16") || c.micro_batch)
    c.dtype = "fp32";
  return c;
}

int SweepTable::count(TrialStatus s) const {
  return int(std::count_if(rows.begin(), rows.end(),
                           [s](const SweepRow& r) { return r.trial.status == s; }));
}

SweepTable build_sweep_table(const profiler::SweepInfo& sweep,
                             const std::vector<profiler::TrialRow>& trials,
                             const std::vector<profiler::PrunedCandidate>& pruned) {
  SweepTable t;
  t.sweep = sweep;
  t.higher_is_better = metric_higher_is_better(sweep.metric);
  for (const auto& trial : trials) t.rows.push_back({trial, parse_trial_config(trial.config_json)});
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    if (r.trial.status != TrialStatus::ok || !r.trial.metric) continue;
    if (t.best < 0) {
      t.best = int(i);
    } else {
      const double cur = *t.rows[size_t(t.best)].trial.metric;
      if (t.higher_is_better ? *r.trial.metric > cur : *r.trial.metric < cur) t.best = int(i);
    }
    if (r.config.micro_batch)
      t.scatter.push_back({double(*r.config.micro_batch), *r.trial.metric,
                           r.config.zero_stage.value_or(-1), int(i)});
  }
  t.pruned = pruned;
  for (const auto& p : pruned) t.pruned_config.push_back(parse_trial_config(p.config_json));
  return t;
}

std::vector<int> sweep_display_order(const SweepTable& t, SweepColumn column, bool ascending,
                                     const SweepFilter& filter) {
  const std::string needle = lower(filter.text);
  std::vector<int> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const SweepRow& r = t.rows[i];
    if (filter.ok_only && (r.trial.status != TrialStatus::ok || !r.trial.metric)) continue;
    if (!needle.empty()) {
      const std::string hay = lower(r.trial.key + "\n" + std::string(to_string(r.trial.status)) +
                                    "\n" + r.trial.reason + "\n" + r.config.dtype);
      if (hay.find(needle) == std::string::npos) continue;
    }
    out.push_back(int(i));
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const SweepRow& ra = t.rows[size_t(a)];
    const SweepRow& rb = t.rows[size_t(b)];
    if (is_text_column(column)) {
      const auto va = column_text(ra, column), vb = column_text(rb, column);
      if (!va || !vb) return va.has_value() && !vb.has_value();
      return ascending ? *va < *vb : *va > *vb;
    }
    const auto va = column_value(ra, column), vb = column_value(rb, column);
    if (!va || !vb) return va.has_value() && !vb.has_value();
    return ascending ? *va < *vb : *va > *vb;
  });
  return out;
}

}  // namespace hybrid::gui
