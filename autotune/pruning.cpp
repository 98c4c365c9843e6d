#include "autotune/pruning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "base/units.h"
#include "kernels/registry.h"

namespace hybrid::autotune {

std::vector<engine::MemoryPrediction> predict_all(const std::vector<Candidate>& candidates,
                                                  const std::string& device) {
  std::vector<engine::MemoryPrediction> out;
  if (candidates.empty()) return out;
  auto choice = kernels::make_backend(device, 0);
  out.reserve(candidates.size());
  for (const auto& c : candidates)
    out.push_back(engine::predict_memory(c.parsed, c.world_size, *choice.backend));
  return out;
}

PruneResult prune(const std::vector<Candidate>& candidates,
                  const std::vector<engine::MemoryPrediction>& predictions,
                  const MemoryBudget& budget) {
  PruneResult r;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const uint64_t need = predictions[i].total();
    if (budget.bytes == 0 || need <= budget.bytes) {
      r.kept.push_back(i);
      continue;
    }
    profiler::PrunedCandidate p;
    p.key = candidates[i].key;
    p.config_json = candidates[i].config.dump();
    p.predicted_mem_bytes = need;
    p.budget_bytes = budget.bytes;
    p.reason =
        fmt::format("predicted {} per rank > budget {} ({}): {}", base::format_bytes(need),
                    base::format_bytes(budget.bytes), budget.source, predictions[i].to_string());
    r.pruned.push_back(std::move(p));
  }
  return r;
}

namespace {

const nlohmann::json* value_at(const nlohmann::json& config, const std::string& dotted) {
  const nlohmann::json* node = &config;
  size_t start = 0;
  while (node->is_object()) {
    const size_t dot = dotted.find('.', start);
    const auto it = node->find(dotted.substr(start, dot == std::string::npos ? dot : dot - start));
    if (it == node->end()) return nullptr;
    if (dot == std::string::npos) return &*it;
    node = &*it;
    start = dot + 1;
  }
  return nullptr;
}

// Why candidate c does not need its value of the memory-saving axis `def`
// (nullopt when it does, or when the comparison cannot be made).
std::optional<std::string> unneeded(const Candidate& c, const AxisDef& def,
                                    const MemoryBudget& budget, const kernels::Backend& backend) {
  const nlohmann::json* v = value_at(c.config, def.name);
  if (!v || *v == def.saves_nothing) return std::nullopt;
  nlohmann::json without = c.config;
  set_path(without, def.name, def.saves_nothing);
  engine::Config parsed;
  try {
    parsed = engine::parse_config(without, c.world_size);
  } catch (const engine::ConfigError&) {
    return std::nullopt;  // no valid config without it: keep the candidate
  }
  const uint64_t need = engine::predict_memory(parsed, c.world_size, backend).total();
  if (budget.bytes != 0 && need > budget.bytes) return std::nullopt;
  return fmt::format(
      "{}={} saves memory it does not need: with {}={} it is predicted {} per rank, within the "
      "budget {} ({})",
      def.short_name, format_value(*v), def.short_name, format_value(def.saves_nothing),
      base::format_bytes(need), base::format_bytes(budget.bytes), budget.source);
}

}  // namespace

std::vector<DroppedCandidate> drop_unneeded_memory_savers(const std::vector<Candidate>& candidates,
                                                          std::vector<size_t>& kept,
                                                          const SearchSpace& space,
                                                          const MemoryBudget& budget,
                                                          const std::string& device) {
  std::vector<const AxisDef*> savers;
  for (const auto& a : space.axes)
    if (a.def->memory_saving() && a.values.size() > 1) savers.push_back(a.def);
  std::vector<DroppedCandidate> dropped;
  if (savers.empty() || kept.empty()) return dropped;
  auto choice = kernels::make_backend(device, 0);
  std::vector<size_t> still;
  for (size_t i : kept) {
    const Candidate& c = candidates[i];
    std::optional<std::string> why;
    for (const AxisDef* def : savers)
      if (def->applies_at(c.stage()) && (why = unneeded(c, *def, budget, *choice.backend))) break;
    if (why)
      dropped.push_back({c.key, c.config, *why});
    else
      still.push_back(i);
  }
  kept = std::move(still);
  return dropped;
}

namespace {

// The key without its batch part: candidates that differ only in micro-batch.
std::string batch_free_key(const std::string& key) {
  std::string out;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t comma = key.find(',', start);
    const std::string part =
        key.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (part.rfind("mbs=", 0) != 0 && part.rfind("gas=", 0) != 0) out += part + ",";
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<size_t> thin_micro_batches(const std::vector<Candidate>& candidates,
                                       std::vector<size_t>& kept, int count) {
  std::vector<size_t> removed;
  if (count <= 0) return removed;
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i : kept) groups[batch_free_key(candidates[i].key)].push_back(i);
  std::vector<size_t> keep_set;
  for (auto& [k, members] : groups) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return candidates[a].micro_batch() < candidates[b].micro_batch();
    });
    const size_t n = members.size();
    if (n <= size_t(count)) {
      keep_set.insert(keep_set.end(), members.begin(), members.end());
      continue;
    }
    std::vector<bool> take(n, false);
    for (int j = 0; j < count; ++j)
      take[count == 1 ? n - 1
                      : size_t(std::lround(double(j) * double(n - 1) / double(count - 1)))] = true;
    for (size_t j = 0; j < n; ++j) (take[j] ? keep_set : removed).push_back(members[j]);
  }
  std::vector<size_t> still;
  for (size_t i : kept)
    if (std::find(keep_set.begin(), keep_set.end(), i) != keep_set.end()) still.push_back(i);
  kept = std::move(still);
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace hybrid::autotune
