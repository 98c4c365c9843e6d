// What the trials will run on, as far as the tuner needs to know before running
// anything: the backend kind (offload and budgets depend on it), a name for the
// log and the probe, and the memory one rank may use.
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/config.h"
#include "kernels/ops.h"

namespace hybrid::autotune {

struct DeviceInfo {
  kernels::BackendKind kind = kernels::BackendKind::cpu;
  std::string name;           // "AMD EPYC 7R13 (2 cores)", "NVIDIA H200"
  uint64_t memory_bytes = 0;  // physical memory (CPU) or one device's memory (GPU)
  std::string note;           // why "auto" chose what it chose
};

// device: the config's hybrid.device ("auto", "cpu", "cuda", "cuda:N").
DeviceInfo detect_device(const std::string& device);

struct MemoryBudget {
  uint64_t bytes = 0;
  std::string source;  // "hybrid.memory_budget", "device memory of NVIDIA H200 less 5 %", ...
};

// Per rank: the config's hybrid.memory_budget when set; else on a GPU the
// device's memory less 5 % (CUDA context, fragmentation); else the host's
// physical memory shared by the ranks of one host.
MemoryBudget memory_budget(const engine::Config& base, const DeviceInfo& dev, int ranks_per_host);

}  // namespace hybrid::autotune
