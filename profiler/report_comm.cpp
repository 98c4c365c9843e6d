#include "profiler/report_comm.h"

#include <fmt/format.h>

#include "profiler/report_format.h"
#include "profiler/tables/collective_groups.h"

namespace hybrid::profiler {

namespace {

std::string by_op_and_size(const RunProfile& p) {
  report::TextTable table({"op", "size", "ranks", "count/rank", "mean latency", "min", "max",
                           "total/rank", "algbw mean (min)", "busbw mean (min)"});
  for (const CollectiveGroup& g : group_collectives(p)) {
    const double n = double(g.ranks);
    table.add_row({g.op, report::format_bytes(g.bytes), std::to_string(g.ranks),
                   fmt::format("{:.1f}", double(g.count) / n),
                   report::format_ms(g.count ? double(g.total_ns) / double(g.count) * 1e-6 : 0),
                   report::format_ms(double(g.min_ns) * 1e-6),
                   report::format_ms(double(g.max_ns) * 1e-6),
                   report::format_ms(double(g.total_ns) / n * 1e-6),
                   fmt::format("{} ({})", report::format_gbps(g.algbw_mean),
                               report::format_gbps(g.algbw_min)),
                   fmt::format("{} ({})", report::format_gbps(g.busbw_mean),
                               report::format_gbps(g.busbw_min))});
  }
  return table.render("  ");
}

std::string per_step(const CommSteps& steps) {
  report::TextTable table(
      {"step", "ranks", "compute", "comm", "exposed comm", "exposed max", "hidden by overlap"}, 0);
  for (const StepComm& s : steps.steps)
    table.add_row({std::to_string(s.step), std::to_string(s.ranks),
                   report::format_ms(s.compute_ms.mean), report::format_ms(s.comm_ms.mean),
                   report::format_ms(s.exposed_ms.mean), report::format_ms(s.exposed_ms.max),
                   report::format_percent(s.hidden_fraction())});
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
    const CommSteps steps = comm_per_step(p);
    const double comm = steps.comm_ms, exposed = steps.exposed_ms;
    out += "\nPer step (rank mean; exposed = the compute lane waited):\n";
    out += per_step(steps);
    out += fmt::format("total comm {}, exposed {} ({} of comm), hidden by overlap {}\n",
                       report::format_ms(comm), report::format_ms(exposed),
                       report::format_percent(comm > 0 ? exposed / comm : 0),
                       report::format_ms(comm - exposed));
  }
  return out;
}

}  // namespace hybrid::profiler
