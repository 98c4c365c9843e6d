#include "profiler/report_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/statistics.h"
#include "profiler/report_format.h"

namespace hybrid::profiler {

std::string steps_report(const RunProfile& p) {
  std::string out = report::section("hybrid steps");
  out += fmt::format("run {} {} · status {} · {} steps\n", p.run.id, p.run.name,
                     to_string(p.run.status), p.steps.size());
  if (p.steps.empty()) return out + "no steps recorded\n";
  report::TextTable table(
      {"step", "loss", "lr", "loss scale", "skipped", "grad norm", "time", "tokens/s", "FLOP/s"},
      0);
  std::vector<double> ms;
  double tokens = 0, flops = 0;
  int skipped = 0;
  for (const auto& s : p.steps) {
    table.add_row({std::to_string(s.step), fmt::format("{:.4f}", s.loss),
                   fmt::format("{:.3e}", s.lr), fmt::format("{:g}", s.loss_scale),
                   s.skipped ? "yes" : "no", fmt::format("{:.3f}", s.grad_norm),
                   report::format_ms(s.step_ms), report::format_count(s.tokens_per_s),
                   report::format_flop_rate(s.flops_per_s)});
    ms.push_back(s.step_ms);
    tokens += s.tokens_per_s;
    flops += s.flops_per_s;
    skipped += s.skipped ? 1 : 0;
  }
  out += table.render("  ");
  const size_t n = ms.size();
  const double median = base::median(ms);
  out += fmt::format("median step {}, mean {} tokens/s, mean {}, {} skipped\n",
                     report::format_ms(median), report::format_count(tokens / double(n)),
                     report::format_flop_rate(flops / double(n)), skipped);
  return out;
}

}  // namespace hybrid::profiler
