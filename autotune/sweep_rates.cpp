// The cost model's inputs for a sweep: the latest probe of this host, else one
// run now, else defaults; placed as the sweep's trials will be.
#include <fmt/format.h>

#include <filesystem>

#include "autotune/probe.h"
#include "autotune/sweep.h"
#include "base/host.h"
#include "profiler/store/run_store.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;

ClusterRates cluster_rates_for(const SweepPlan& plan, profiler::RunStore* store, bool may_probe,
                               std::string& note) {
  const auto& s = plan.settings;
  std::optional<profiler::ProbeResult> probe;
  if (store) probe = store->latest_probe(base::host_name());
  if (!probe && store && may_probe && s.probe) {
    ProbeOptions po;
    po.device = std::string(engine::to_string(plan.base_cfg.device));
    po.dtype = std::string(kernels::dtype_name(plan.base_cfg.param_dtype()));
    const std::string dir = (fs::path(s.db).parent_path() / "tune" / "probe").string();
    try {
      auto p = launch_probe(s.self_exe, s.nprocs, s.launcher, po, dir, 300);
      p.host = base::host_name();
      p.id = store->add_probe(p);
      probe = p;
      note = "no probe of this host in the store: ran one\n" + format_probe(p);
    } catch (const std::exception& e) {
      note = fmt::format("probe failed, using default rates: {}", e.what());
    }
  } else if (probe) {
    note = fmt::format("cost model inputs: latest probe {} of {}", probe->id, probe->host);
    if (probe->world_size != s.nprocs)
      note += fmt::format(
          " (measured with {} ranks, the sweep uses {}: run `hybrid-tune probe --nprocs {}` to "
          "refresh)",
          probe->world_size, s.nprocs, s.nprocs);
  }
  ClusterRates rates = probe ? rates_from_probe(*probe, plan.device.kind)
                             : default_rates(plan.device.kind, s.nprocs);
  if (!probe && note.empty())
    note = "no probe in the store: default rates (run `hybrid-tune probe`)";
  // mpirun fills the first host's slots first: more ranks than that cross hosts.
  rates.ranks_per_host = s.hosts.empty() ? s.nprocs : std::min(s.nprocs, s.hosts.front().slots);
  if (!s.hosts.empty() && s.nprocs > s.hosts.front().slots) rates.link = "inter_host";
  return rates;
}

}  // namespace hybrid::autotune
