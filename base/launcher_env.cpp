#include "base/launcher_env.h"

#include <fmt/format.h>

#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "base/text.h"

namespace hybrid::base {

namespace {

std::optional<int> first_of(std::initializer_list<const char*> names, int min_value) {
  for (const char* n : names)
    if (auto v = env_int(n, min_value)) return v;
  return std::nullopt;
}

}  // namespace

std::optional<int> env_int(const char* name, int min_value) {
  const char* raw = std::getenv(name);
  if (!raw) return std::nullopt;
  const std::optional<long long> n = parse_int(raw);
  if (!n || *n < min_value || *n > std::numeric_limits<int>::max())
    throw std::runtime_error(
        fmt::format("environment: {}='{}' is not a whole number >= {}", name, raw, min_value));
  return int(*n);
}

LauncherEnv launcher_env() {
  LauncherEnv e;
  e.in_slurm_step = std::getenv("SLURM_STEP_ID") != nullptr;
  e.rank =
      first_of({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}, 0).value_or(0);
  auto world = first_of({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}, 1);
  // Outside a job step (an sbatch script's own shell) SLURM_NTASKS describes the
  // allocation, not this process's world.
  if (!world && e.in_slurm_step) world = first_of({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, 1);
  e.world_size = world.value_or(1);
  e.local_rank =
      first_of({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, 0).value_or(0);
  e.local_size = first_of({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 1).value_or(0);
  // Slurm writes "2(x3)" for 2 tasks on each of 3 nodes: the leading count.
  if (e.local_size == 0) {
    const char* raw = std::getenv("SLURM_NTASKS_PER_NODE");
    const std::string_view slurm = raw ? raw : "";
    const std::optional<long long> n = parse_int(slurm.substr(0, slurm.find_first_of("(,")));
    e.local_size = n && *n >= 1 && *n <= std::numeric_limits<int>::max() ? int(*n) : 1;
  }
  return e;
}

}  // namespace hybrid::base
