// The cluster probe: GEMM FLOP/s per rank and collective bandwidth across
// message sizes, measured on the ranks a launcher starts — the cost model's
// inputs. `hybrid-tune probe` launches `hybrid-tune probe-worker` through the
// launcher template (all ranks measure at once, as trials will run); rank 0
// writes the ProbeResult as JSON, and the parent stores it in the run store.
//
// Collectives go through the engine's communicator factory (MPI between
// processes, host buffers), with nccl-tests' conventions for message size,
// algbw and busbw (profiler/comm_tracer.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/hostfile.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct ProbeOptions {
  std::string device = "auto";  // hybrid.device spelling
  std::string dtype = "fp32";   // GEMM dtype: the one the trials train in
  int gemm_size = 0;            // M = N = K; 0: 1024 on a CPU, 8192 on a GPU
  int gemm_iters = 5;
  std::vector<uint64_t> message_bytes;  // empty: 4 KiB .. 16 MiB, ×4 steps
  int comm_iters = 0;                   // 0: by size (more for small messages)
};

// Collective on every rank; rank 0 writes the result to out_path (atomically)
// and returns it, other ranks return their partial view.
profiler::ProbeResult run_probe_worker(const ProbeOptions& opts, const std::string& out_path);

nlohmann::json probe_to_json(const profiler::ProbeResult& p);
profiler::ProbeResult probe_from_json(const nlohmann::json& j);  // throws TuneError naming the key

// Runs the worker through the launcher and returns what rank 0 wrote (not yet
// stored). self: the hybrid-tune executable; work_dir receives probe.json and
// probe.log. Throws TuneError with the log's tail when the probe fails.
profiler::ProbeResult launch_probe(const std::string& self, int nprocs,
                                   const std::string& launcher_template, const ProbeOptions& opts,
                                   const std::string& work_dir, double timeout_s);

// Across the hosts of a hostfile, each link class on its own launch: the
// collectives within one host (the first, up to `nprocs` ranks on it) and
// across hosts (one rank on each of up to `nprocs` hosts), merged into one
// result; the GEMM rate is the one-host launch's. One host: launch_probe.
profiler::ProbeResult launch_probe_on_hosts(const std::string& self, int nprocs,
                                            const std::vector<HostSlots>& hosts,
                                            const ProbeOptions& opts, const std::string& work_dir,
                                            double timeout_s);

// The probe as a table with units, for the CLI.
std::string format_probe(const profiler::ProbeResult& p);

}  // namespace hybrid::autotune
