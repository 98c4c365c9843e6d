// hybrid-tune --dry-run: the candidates with their predicted memory and step
// time, and the pruned and dropped ones with their reasons; nothing is run.
#include <fmt/format.h>

#include <filesystem>

#include "autotune/cost_model.h"
#include "autotune/report.h"
#include "autotune/sweep.h"
#include "base/units.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;

void print_dry_run(const SweepPlan& plan, std::ostream& out) {
  const auto& s = plan.settings;
  std::unique_ptr<profiler::RunStore> store;
  if (fs::exists(s.db)) {
    try {
      store = std::make_unique<profiler::RunStore>(s.db, profiler::OpenMode::read_only);
    } catch (const std::exception& e) {
      out << "note: cannot read " << s.db << ": " << e.what() << "\n";
    }
  }
  std::string note;
  const ClusterRates rates = cluster_rates_for(plan, store.get(), false, note);
  for (const auto& n : plan.notes) out << "note: " << n << "\n";
  out << "note: " << note << "\n";
  const CostModel prior;
  out << fmt::format(
      "dry run: {} candidates on {} rank(s), {} runnable, {} pruned (budget {} per rank, {}), {} "
      "dropped\n",
      plan.enumerated, s.nprocs, plan.runnable.size(), plan.pruned.size(),
      base::format_bytes(plan.budget.bytes), plan.budget.source, plan.dropped.size());
  out << fmt::format("{:<44} {:>12} {:>14} {:>20}\n", "candidate", "pred. mem", "pred. ms/step",
                     fmt::format("pred. {}", metric_name(s.metric)));
  for (size_t i = 0; i < plan.runnable.size(); ++i) {
    const auto f = step_features(plan.runnable[i].parsed, s.nprocs, rates);
    const double t = prior.predict_s(f);
    out << fmt::format(
        "{:<44} {:>12} {:>14.1f} {:>20}\n", plan.runnable[i].key,
        base::format_bytes(plan.memory[i].total()), t * 1e3,
        format_metric(s.metric, metric_from_step_time(s.metric, t, f.samples_per_step,
                                                      f.tokens_per_step, f.flops_per_step)));
  }
  if (!plan.pruned.empty()) out << "pruned by the memory model:\n" << pruned_table(plan.pruned);
  if (!plan.dropped.empty()) {
    out << "dropped:\n";
    for (const auto& d : plan.dropped) out << fmt::format("  {:<34} {}\n", d.key, d.reason);
  }
  out << "nothing was run (--dry-run)\n";
}

}  // namespace hybrid::autotune
