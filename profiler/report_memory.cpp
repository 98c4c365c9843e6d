#include "profiler/report_memory.h"

#include <fmt/format.h>

#include <map>

#include "profiler/report_format.h"

namespace hybrid::profiler {

namespace {

std::string ratio(uint64_t measured, std::optional<uint64_t> predicted) {
  if (!predicted || *predicted == 0) return "-";
  return fmt::format("{:.2f}", double(measured) / double(*predicted));
}

}  // namespace

namespace {

// Rows of one memory space: device categories have no prefix; host memory
// and NVMe swap files of the offload are "host.<category>" and "nvme.<category>".
std::string space_of(const std::string& category) {
  const auto dot = category.find('.');
  return dot == std::string::npos ? std::string() : category.substr(0, dot);
}

std::string space_table(const std::vector<const MemoryRow*>& rows, size_t prefix) {
  report::TextTable table({"category", "current", "peak", "predicted", "peak/predicted"});
  uint64_t current = 0, peak = 0, predicted = 0;
  bool all_predicted = true;
  for (const MemoryRow* m : rows) {
    table.add_row({m->category.substr(prefix), report::format_bytes(m->current_bytes),
                   report::format_bytes(m->peak_bytes),
                   m->predicted_bytes ? report::format_bytes(*m->predicted_bytes) : "-",
                   ratio(m->peak_bytes, m->predicted_bytes)});
    current += m->current_bytes;
    peak += m->peak_bytes;
    predicted += m->predicted_bytes.value_or(0);
    all_predicted = all_predicted && m->predicted_bytes.has_value();
  }
  // Categories peak at different times: the sum bounds the true peak from above.
  const auto total_predicted = all_predicted ? std::optional<uint64_t>(predicted) : std::nullopt;
  table.add_row({"total (sum)", report::format_bytes(current), report::format_bytes(peak),
                 total_predicted ? report::format_bytes(predicted) : "-",
                 ratio(peak, total_predicted)});
  return table.render("  ");
}

}  // namespace

std::string memory_report(const RunProfile& p) {
  std::string out = report::section("hybrid memory");
  out += fmt::format("run {} {} · world size {}\n", p.run.id, p.run.name, p.run.world_size);
  if (p.memory.empty()) return out + "no memory rows recorded\n";
  std::map<int, std::map<std::string, std::vector<const MemoryRow*>>> by_rank;
  for (const auto& m : p.memory) by_rank[m.rank][space_of(m.category)].push_back(&m);
  for (const auto& [rank, spaces] : by_rank) {
    for (const auto& [space, rows] : spaces) {
      if (space.empty())
        out += fmt::format("\nrank {}:\n", rank);
      else
        out += fmt::format(
            "\nrank {}, {}:\n", rank,
            space == "nvme" ? "NVMe swap files (offload)" : space + " memory (offload)");
      out += space_table(rows, space.empty() ? 0 : space.size() + 1);
    }
  }
  return out;
}

}  // namespace hybrid::profiler
