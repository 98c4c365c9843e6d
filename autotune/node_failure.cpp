#include "autotune/node_failure.h"

#include <array>

namespace hybrid::autotune {

namespace {

// Phrases, not whole messages: they hold across Open MPI 4.x/5.x and Slurm
// versions. Each names a daemon or a node, never a rank.
constexpr std::array<std::string_view, 7> kPhrases = {
    "lost communication with a remote daemon",       // ORTE / PRTE
    "unable to reliably start one or more daemons",  // ORTE: the agent to a host died
    "daemon has unexpectedly failed",                // ORTE / PRTE
    "daemon on the node",                            // ORTE: "...did not report back"
    "Node failure on",                               // srun
    "DUE TO NODE FAILURE",                           // slurmstepd
    "NODE_FAIL",                                     // sbatch --wait, sacct state
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string> node_failure_line(std::string_view out) {
  for (size_t begin = 0; begin < out.size();) {
    size_t end = out.find('\n', begin);
    if (end == std::string_view::npos) end = out.size();
    const std::string_view line = out.substr(begin, end - begin);
    for (std::string_view phrase : kPhrases)
      if (line.find(phrase) != std::string_view::npos) return std::string(trim(line));
    begin = end + 1;
  }
  return std::nullopt;
}

}  // namespace hybrid::autotune
