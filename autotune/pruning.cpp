#include "autotune/pruning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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
