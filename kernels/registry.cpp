#include "kernels/registry.h"

#include <charconv>
#include <stdexcept>

#if HYBRID_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace hybrid::kernels {

bool cuda_backend_compiled() {
#if HYBRID_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

// "cuda" → -1 (pick by rank), "cuda:N" → N.
int parse_cuda_index(std::string_view device) {
  if (device == "cuda") return -1;
  const std::string_view num = device.substr(5);
  int idx = -1;
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
  if (ec != std::errc() || ptr != num.data() + num.size() || idx < 0 || num.empty())
    throw std::invalid_argument("device: expected auto, cpu, cuda or cuda:N, got \"" +
                                std::string(device) + "\"");
  return idx;
}

}  // namespace

BackendChoice make_backend(std::string_view device, int local_rank) {
  const bool want_cuda = device == "cuda" || device.starts_with("cuda:");
  if (device != "auto" && device != "cpu" && !want_cuda)
    throw std::invalid_argument("device: expected auto, cpu, cuda or cuda:N, got \"" +
                                std::string(device) + "\"");
  if (device == "cpu") return {make_cpu_backend(), "device cpu: using the CPU backend"};
  const int requested = want_cuda ? parse_cuda_index(device) : -1;

#if HYBRID_HAVE_CUDA
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) {
    if (want_cuda)
      throw std::runtime_error("device \"" + std::string(device) +
                               "\" was requested but no CUDA device is available (" + why + ")");
    return {make_cpu_backend(), "device auto: no CUDA device (" + why + "); using the CPU backend"};
  }
  int index = requested >= 0 ? requested : (local_rank < 0 ? 0 : local_rank % count);
  if (index >= count)
    throw std::runtime_error("device \"" + std::string(device) + "\" was requested but only " +
                             std::to_string(count) + " CUDA device(s) exist");
  auto backend = make_cuda_backend(index);
  std::string note = "device " + std::string(device) + ": " + backend->name();
  return {std::move(backend), std::move(note)};
#else
  (void)local_rank;
  (void)requested;
  if (want_cuda)
    throw std::runtime_error("device \"" + std::string(device) +
                             "\" was requested but no CUDA device is available (this build has no "
                             "CUDA backend; configure with -DHYBRID_CUDA=ON)");
  return {make_cpu_backend(),
          "device auto: this build has no CUDA backend (HYBRID_CUDA=OFF); using the CPU backend"};
#endif
}

}  // namespace hybrid::kernels
