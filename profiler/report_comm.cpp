#include "profiler/report_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "profiler/report_format.h"

namespace hybrid::profiler {

namespace {

struct OpSize {
  std::set<int> ranks;
  int64_t count = 0, total_ns = 0;
  int64_t min_ns = INT64_MAX, max_ns = 0;
  double algbw_sum = 0, busbw_sum = 0, algbw_min = 1e300, busbw_min = 1e300;
};

struct StepComm {
  int ranks = 0;
  double compute_ms = 0, comm_ms = 0, exposed_ms = 0, exposed_max_ms = 0;
};

std::string by_op_and_size(const RunProfile& p) {
  std::map<std::pair<std::string, uint64_t>, OpSize> groups;
  for (const auto& c : p.comm) {
    OpSize& g = groups[{c.op, c.bytes}];
    g.ranks.insert(c.rank);
    g.count += c.count;
    g.total_ns += c.total_ns;
    g.min_ns = std::min(g.min_ns, c.min_ns);
    g.max_ns = std::max(g.max_ns, c.max_ns);
    g.algbw_sum += c.algbw_gbps;
    g.busbw_sum += c.busbw_gbps;
    g.algbw_min = std::min(g.algbw_min, c.algbw_gbps);
    g.busbw_min = std::min(g.busbw_min, c.busbw_gbps);
  }
  report::TextTable table({"op", "size", "ranks", "count/rank", "mean latency", "min", "max",
                           "total/rank", "algbw mean (min)", "busbw mean (min)"});
  for (const auto& [key, g] : groups) {
    const double n = double(g.ranks.size());
    table.add_row({key.first, report::format_bytes(key.second), std::to_string(g.ranks.size()),
                   fmt::format("{:.1f}", double(g.count) / n),
                   report::format_ms(g.count ? double(g.total_ns) / double(g.count) * 1e-6 : 0),
                   report::format_ms(double(g.min_ns) * 1e-6),
                   report::format_ms(double(g.max_ns) * 1e-6),
                   report::format_ms(double(g.total_ns) / n * 1e-6),
                   fmt::format("{} ({})", report::format_gbps(g.algbw_sum / n),
                               report::format_gbps(g.algbw_min)),
                   fmt::format("{} ({})", report::format_gbps(g.busbw_sum / n),
                               report::format_gbps(g.busbw_min))});
  }
  return table.render("  ");
}

std::string per_step(const RunProfile& p, double& comm_total, double& exposed_total) {
  std::map<int64_t, StepComm> steps;
  for (const auto& r : p.step_ranks) {
    StepComm& s = steps[r.step];
    ++s.ranks;
    s.compute_ms += r.compute_ms;
    s.comm_ms += r.comm_ms;
    s.exposed_ms += r.exposed_comm_ms;
    s.exposed_max_ms = std::max(s.exposed_max_ms, r.exposed_comm_ms);
  }
  report::TextTable table(
      {"step", "ranks", "compute", "comm", "exposed comm", "exposed max", "hidden by overlap"}, 0);
  comm_total = exposed_total = 0;
  for (const auto& [step, s] : steps) {
    const double n = double(s.ranks);
    comm_total += s.comm_ms / n;
    exposed_total += s.exposed_ms / n;
    table.add_row({std::to_string(step), std::to_string(s.ranks),
                   report::format_ms(s.compute_ms / n), report::format_ms(s.comm_ms / n),
                   report::format_ms(s.exposed_ms / n), report::format_ms(s.exposed_max_ms),
                   report::format_percent(s.comm_ms > 0 ? 1.0 - s.exposed_ms / s.comm_ms : 0)});
  }
  return table.render("  ");
}

}  // namespace

std::string comm_report(const RunProfile& p) {
  std::string out = report::section("hybrid communication profile");
  out += fmt::format("run {} {} · world size {}\n", p.run.id, p.run.name, p.run.world_size);
  if (p.comm.empty()) {
    out += "no collectives recorded (enable comms_logger in the config)\n";
  } else {
    out += "\nBy op and message size (latency over every rank; bandwidth mean (min) over ranks):\n";
    out += by_op_and_size(p);
  }
  if (!p.step_ranks.empty()) {
    double comm = 0, exposed = 0;
    out += "\nPer step (rank mean; exposed = the compute lane waited):\n";
    out += per_step(p, comm, exposed);
    out += fmt::format("total comm {}, exposed {} ({} of comm), hidden by overlap {}\n",
                       report::format_ms(comm), report::format_ms(exposed),
                       report::format_percent(comm > 0 ? exposed / comm : 0),
                       report::format_ms(comm - exposed));
  }
  return out;
}

}  // namespace hybrid::profiler
