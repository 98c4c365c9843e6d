#include "profiler/report_gpu.h"

#include <fmt/format.h>

#include "profiler/gpu_timeline.h"
#include "profiler/report_format.h"

namespace hybrid::profiler {

namespace {

std::string us(int64_t ns) { return fmt::format("{:.1f} µs", double(ns) / 1e3); }
std::string pct(double p) { return fmt::format("{:.2f}%", p); }

}  // namespace

std::string gpu_report(const RunProfile& p, const EventSet& events, size_t top_kernels) {
  std::string out = report::section("hybrid GPU timeline");
  out += fmt::format("run {} {} · source {} · device {} · {} rank(s) with GPU records\n", p.run.id,
                     p.run.name, p.run.source, p.run.device.empty() ? "-" : p.run.device,
                     p.gpu.size());
  if (p.gpu.empty()) return out + "no GPU records in this run (CPU backend, or CUPTI was off)\n";

  report::TextTable breakdown({"rank", "kernel span", "idle", "compute", "non-compute", "idle %",
                               "compute %", "non-compute %", "comm-comp overlap", "exposed comm"},
                              0);
  for (const GpuRankTimeline& t : p.gpu) {
    const auto overlap = t.comm_comp_overlap_pct();
    breakdown.add_row({std::to_string(t.rank), us(t.span_ns), us(t.idle_ns), us(t.compute_ns),
                       us(t.non_compute_ns), pct(t.pct(t.idle_ns)), pct(t.pct(t.compute_ns)),
                       pct(t.pct(t.non_compute_ns)), overlap ? pct(*overlap) : "-",
                       us(t.exposed_comm_ns)});
  }
  out += "\ntemporal breakdown (span = first GPU record start .. last end)\n";
  out += breakdown.render("  ");

  out += "\nkernel-type breakdown (exclusive: time when exactly these kinds of work run)\n";
  report::TextTable kinds({"rank", "kind", "time", "% of span"}, 2);
  for (const GpuRankTimeline& t : p.gpu)
    for (int mask = 1; mask < kGpuWorkMasks; ++mask) {
      const int64_t ns = t.exclusive_ns[size_t(mask)];
      if (ns > 0)
        kinds.add_row({std::to_string(t.rank), gpu_work_mask_name(mask), us(ns), pct(t.pct(ns))});
    }
  out += kinds.render("  ");

  if (top_kernels > 0 && !events.events.empty()) {
    for (const GpuRankTimeline& t : p.gpu) {
      out += fmt::format("\ntop {} kernels of rank {} by device time\n", top_kernels, t.rank);
      report::TextTable top({"kernel", "kind", "count", "total", "% of span", "max"}, 2);
      for (const GpuKernelRow& k : top_gpu_kernels(events, t.rank, top_kernels)) {
        std::string name = k.name.size() > 80 ? k.name.substr(0, 77) + "..." : k.name;
        top.add_row({name, std::string(to_string(k.work)), std::to_string(k.count), us(k.total_ns),
                     pct(t.pct(k.total_ns)), us(k.max_ns)});
      }
      out += top.render("  ");
    }
  }
  return out;
}

nlohmann::json gpu_report_json(const RunProfile& p) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const GpuRankTimeline& t : p.gpu) {
    const auto overlap = t.comm_comp_overlap_pct();
    ranks.push_back({{"rank", t.rank},
                     {"kernel_span_us", double(t.span_ns) / 1e3},
                     {"idle_us", double(t.idle_ns) / 1e3},
                     {"compute_us", double(t.compute_ns) / 1e3},
                     {"non_compute_us", double(t.non_compute_ns) / 1e3},
                     {"idle_pct", t.pct(t.idle_ns)},
                     {"compute_pct", t.pct(t.compute_ns)},
                     {"non_compute_pct", t.pct(t.non_compute_ns)},
                     {"comm_comp_overlap_pct", overlap ? nlohmann::json(*overlap) : nullptr}});
  }
  return {{"ranks", ranks}};
}

}  // namespace hybrid::profiler
