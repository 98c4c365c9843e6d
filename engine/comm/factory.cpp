#include "engine/comm/factory.h"

#include <fmt/format.h>
#include <mpi.h>

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace hybrid::engine::comm {

namespace {

int parse_size(const char* var, const char* value) {
  const std::string_view s(value);
  int n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < 1)
    throw std::runtime_error(
        fmt::format("environment: {}='{}' is not a positive rank count", var, value));
  return n;
}

}  // namespace

int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (const char* v = std::getenv(var)) return parse_size(var, v);
  if (std::getenv("SLURM_STEP_ID")) {
    for (const char* var : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})
      if (const char* v = std::getenv(var)) return parse_size(var, v);
  }
  return 1;
}

bool launched_with_multiple_ranks() { return launcher_world_size() > 1; }

std::unique_ptr<Communicator> make_communicator(std::function<int64_t()> clock) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (launched_with_multiple_ranks() || (initialized && !finalized))
    return make_mpi_communicator(std::move(clock));
  return make_single_communicator(std::move(clock));
}

}  // namespace hybrid::engine::comm
