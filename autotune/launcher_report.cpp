#include "autotune/launcher_report.h"

#include <array>
#include <utility>

#include "base/text.h"

namespace hybrid::autotune {

namespace {

using V = LauncherVerdict;

// Phrases, not whole messages: they hold across Open MPI 4.x/5.x and Slurm
// versions. The more specific phrase comes first ("CANCELLED AT ... DUE TO
// TIME LIMIT" is a time limit, not a cancellation).
constexpr std::array<std::pair<std::string_view, V>, 13> kPhrases = {{
    {"lost communication with a remote daemon", V::node_failure},       // ORTE / PRTE
    {"unable to reliably start one or more daemons", V::node_failure},  // ORTE: agent died
    {"daemon has unexpectedly failed", V::node_failure},                // ORTE / PRTE
    {"daemon on the node", V::node_failure},                            // ORTE: no report back
    {"Node failure on", V::node_failure},                               // srun
    {"DUE TO NODE FAILURE", V::node_failure},                           // slurmstepd
    {"NODE_FAIL", V::node_failure},                                     // sbatch --wait
    {"DUE TO TIME LIMIT", V::time_limit},                               // slurmstepd
    {"oom-kill event", V::oom},                                         // slurmstepd (cgroup)
    {"Exceeded job memory limit", V::oom},                              // srun
    {"exceeded memory limit", V::oom},         // slurmstepd: JobAcctGatherParams=OverMemoryKill
    {"CANCELLED AT", V::cancelled},            // slurmstepd: scancel
    {"Job has been cancelled", V::cancelled},  // srun
}};

V verdict_of(std::string_view line) {
  for (const auto& [phrase, verdict] : kPhrases)
    if (line.find(phrase) != std::string_view::npos) return verdict;
  return V::none;
}

}  // namespace

LauncherReport read_launcher_report(std::string_view out) {
  LauncherReport report;
  for (size_t begin = 0; begin < out.size();) {
    size_t end = out.find('\n', begin);
    if (end == std::string_view::npos) end = out.size();
    const std::string_view line = base::trim(out.substr(begin, end - begin));
    begin = end + 1;
    const V v = verdict_of(line);
    if (v == V::none) continue;
    if (report.verdict == V::none || (v == V::node_failure && report.verdict == V::cancelled))
      report = {v, std::string(line)};
  }
  return report;
}

}  // namespace hybrid::autotune
