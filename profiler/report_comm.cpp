#include "profiler/report_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "profiler/report_format.h"
#include "profiler/tables/collective_groups.h"
#include "profiler/tables/pipeline_bubbles.h"

namespace hybrid::profiler {

namespace {

// The offload path's swap-file reads and writes share the comm_stats rows
// (ops nvme_read, nvme_write) but are not collectives.
bool is_io(const std::string& op) { return op.rfind("nvme_", 0) == 0; }

std::string by_op_and_size(const std::vector<CollectiveGroup>& groups) {
  report::TextTable table({"op", "group", "link", "size", "ranks", "count/rank", "mean latency",
                           "min", "max", "total/rank", "algbw mean (min)", "busbw mean (min)"});
  for (const CollectiveGroup& g : groups) {
    if (is_io(g.op)) continue;
    const double n = double(g.ranks);
    table.add_row({g.op, g.comm_group, g.link, report::format_bytes(g.bytes),
                   std::to_string(g.ranks), fmt::format("{:.1f}", double(g.count) / n),
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

// Intra- against inter-host: what each link class carried and how fast.
std::string by_link(const std::vector<CollectiveGroup>& groups) {
  report::TextTable table({"link", "ranks", "calls/rank", "bytes/rank", "time/rank",
                           "algbw (bytes / time)", "busbw (mean of calls)"});
  for (const LinkTotals& t : link_totals(groups))
    table.add_row({t.link, std::to_string(t.ranks), fmt::format("{:.1f}", t.calls),
                   report::format_bytes(uint64_t(t.bytes)), report::format_ms(t.ns * 1e-6),
                   report::format_gbps(t.algbw()), report::format_gbps(t.busbw_mean)});
  return table.render("  ");
}

// Per communicator group (tp all-reduce, pp send/recv, dp reductions, ...):
// calls, bytes and time per rank that issued them.
std::string by_group(const std::vector<CollectiveGroup>& groups) {
  struct Totals {
    int ranks = 0;
    double calls = 0, bytes = 0, ns = 0;
  };
  std::map<std::string, Totals> by;
  for (const CollectiveGroup& g : groups) {
    if (is_io(g.op)) continue;
    Totals& t = by[g.comm_group];
    t.ranks = std::max(t.ranks, g.ranks);
    t.calls += double(g.count);
    t.bytes += double(g.count) * double(g.bytes);
    t.ns += double(g.total_ns);
  }
  report::TextTable table({"group", "ranks", "calls/rank", "bytes/rank", "time/rank"});
  for (const auto& [name, t] : by) {
    const double n = std::max(1, t.ranks);
    table.add_row({name, std::to_string(t.ranks), fmt::format("{:.1f}", t.calls / n),
                   report::format_bytes(uint64_t(t.bytes / n)),
                   report::format_ms(t.ns / n * 1e-6)});
  }
  return table.render("  ");
}

// "stage s: bubble x ms of y ms (z %)", per step (rank mean).
std::string bubbles(const RunProfile& p) {
  const auto stages = stage_bubbles(p);
  if (stages.empty()) return {};
  std::string out = "\nPipeline bubble per stage (waits on send/recv, per step, rank mean):\n";
  for (const StageBubble& b : stages)
    out +=
        fmt::format("  stage {}: bubble {} of {} ({})\n", b.stage, report::format_ms(b.bubble_ms),
                    report::format_ms(b.step_ms), report::format_percent(b.fraction()));
  return out;
}

// Per op: bytes and time per rank, and the bandwidth they make (bytes / time).
std::string offload_io(const std::vector<CollectiveGroup>& groups) {
  struct Totals {
    int ranks = 0;
    double count = 0, bytes = 0, ns = 0;
  };
  std::map<std::string, Totals> ops;
  for (const CollectiveGroup& g : groups) {
    if (!is_io(g.op)) continue;
    Totals& t = ops[g.op];
    t.ranks = std::max(t.ranks, g.ranks);
    t.count += double(g.count);
    t.bytes += double(g.count) * double(g.bytes);
    t.ns += double(g.total_ns);
  }
  if (ops.empty()) return {};
  report::TextTable table({"op", "requests/rank", "bytes/rank", "time/rank", "bandwidth"});
  for (const auto& [op, t] : ops) {
    const double n = std::max(1, t.ranks);
    table.add_row({op, fmt::format("{:.1f}", t.count / n),
                   report::format_bytes(uint64_t(t.bytes / n)), report::format_ms(t.ns / n * 1e-6),
                   report::format_gbps(t.ns > 0 ? t.bytes / t.ns : 0.0)});
  }
  return "\nOffload I/O (NVMe swap files; bandwidth = bytes / summed request time):\n" +
         table.render("  ");
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
  const auto groups = group_collectives(p);
  const bool collectives =
      std::any_of(groups.begin(), groups.end(), [](const auto& g) { return !is_io(g.op); });
  if (!collectives) {
    out += "no collectives recorded (enable comms_logger in the config)\n";
  } else {
    out += "\nBy op and message size (latency over every rank; bandwidth mean (min) over ranks):\n";
    out += by_op_and_size(groups);
    out += "\nBy link (intra-host: shared memory; inter-host: the network):\n";
    out += by_link(groups);
    out +=
        "\nBy communicator group (world; dp: ZeRO; tp: tensor parallel; pp: pipeline stages; "
        "tied: embedding):\n";
    out += by_group(groups);
  }
  out += offload_io(groups);
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
  out += bubbles(p);
  return out;
}

}  // namespace hybrid::profiler
