// The machine this process runs on: its name and its CPU, as recorded with
// runs, probes and benchmark results.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::base {

// gethostname(), "localhost" when it fails.
std::string host_name();

// Bytes of physical memory of this machine; 0 when unknown.
uint64_t physical_memory();

// Which machine (kernel) this process runs on: Linux's boot id, shared by
// every network or UTS namespace of one kernel and different on every other
// machine; the host name where it cannot be read. HYBRID_MACHINE_ID overrides
// it (tests that stand in for separate machines).
std::string machine_id();

struct CpuInfo {
  std::string model;               // "AMD EPYC 7B13"; "" when the text has none
  std::vector<std::string> flags;  // the flags that change which kernels run (avx2, avx512f, ...)
};

// The first processor block of /proc/cpuinfo text (x86 "model name"/"flags",
// Arm "Model"/"Features"); flags sorted.
CpuInfo parse_cpuinfo(std::string_view text);
CpuInfo read_cpu_info();  // this machine's; empty when /proc/cpuinfo cannot be read

}  // namespace hybrid::base
