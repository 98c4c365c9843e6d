#include "autotune/device_info.h"

#include <fmt/format.h>
#include <unistd.h>

#include <thread>

#include "autotune/tune_error.h"
#include "base/host.h"
#include "base/text.h"
#include "kernels/registry.h"

#ifdef HYBRID_AUTOTUNE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace hybrid::autotune {

namespace {

std::string cpu_name() {
  const std::string model = base::read_cpu_info().model;
  return fmt::format("{} ({} cores)", model.empty() ? "CPU" : model,
                     std::max(1u, std::thread::hardware_concurrency()));
}

#ifdef HYBRID_AUTOTUNE_CUDA
bool cuda_device(int index, DeviceInfo& d, std::string& why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n <= 0) {
    why = err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index % n) != cudaSuccess) {
    why = "cudaGetDeviceProperties failed";
    return false;
  }
  d.kind = kernels::BackendKind::cuda;
  d.name = prop.name;
  d.memory_bytes = prop.totalGlobalMem;
  return true;
}
#endif

}  // namespace

DeviceInfo detect_device(const std::string& device) {
  DeviceInfo d;
  d.name = cpu_name();
  d.memory_bytes = base::physical_memory();
  if (device == "cpu") return d;
  const bool want_cuda = device.rfind("cuda", 0) == 0;
  int index = 0;
  if (want_cuda && device.size() > 4) {
    const std::optional<long long> n =
        device[4] == ':' ? base::parse_int(std::string_view(device).substr(5)) : std::nullopt;
    if (!n || *n < 0 || *n > 1024)
      throw TuneError(fmt::format("device: \"{}\" is not cpu, cuda or cuda:N", device));
    index = int(*n);
  }
  std::string why = "this build has no CUDA backend";
#ifdef HYBRID_AUTOTUNE_CUDA
  DeviceInfo g = d;
  if (cuda_device(index, g, why)) return g;
#else
  (void)index;
#endif
  if (want_cuda)
    throw TuneError(
        fmt::format("config: hybrid.device is \"{}\" but no GPU is usable: {}", device, why));
  d.note = "device auto: CPU (" + why + ")";
  return d;
}

MemoryBudget memory_budget(const engine::Config& base, const DeviceInfo& dev, int ranks_per_host) {
  MemoryBudget b;
  if (base.memory_budget > 0) {
    b.bytes = base.memory_budget;
    b.source = "hybrid.memory_budget";
  } else if (dev.kind == kernels::BackendKind::cuda) {
    b.bytes = dev.memory_bytes / 100 * 95;
    b.source = fmt::format("device memory of {} less 5 %", dev.name);
  } else {
    b.bytes = dev.memory_bytes / uint64_t(std::max(1, ranks_per_host));
    b.source = fmt::format("host memory / {} rank(s)", std::max(1, ranks_per_host));
  }
  return b;
}

}  // namespace hybrid::autotune
