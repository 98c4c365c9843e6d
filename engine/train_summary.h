// What a training run reports: the --result file (benchmarks, the autotuner and
// tests parse it) and the run store's summary_json. One report per concern,
// each writing its own keys of the flat JSON object (docs: hybrid-train --result).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/memory/layout.h"
#include "engine/memory/tracking_allocator.h"
#include "profiler/comm_record.h"
#include "profiler/profile_data.h"

namespace hybrid {

// The steps and their losses.
struct TrainingReport {
  int64_t steps = 0;  // steps run by this invocation
  int64_t global_step = 0;
  double final_loss = 0.0;
  std::vector<double> losses;  // per step, averaged over ranks
  int64_t skipped_steps = 0;

  nlohmann::json to_json() const;
};

// Rates from the median step time.
struct ThroughputReport {
  double ms_per_step_median = 0.0;
  double tokens_per_s = 0.0;
  double samples_per_s = 0.0;
  double flops_per_step = 0.0;  // model FLOPs: (6·N + 6·L·C·T)·B·T (model_flops_per_step)
  double achieved_flops_per_s = 0.0;

  nlohmann::json to_json() const;
};

// Memory by category (engine/memory/layout.h), measured and as the memory model
// predicts it: on the device, in host memory (an offloaded optimizer; zero
// without offload) and in NVMe swap files (zero without NVMe offload).
struct MemoryReport {
  engine::MemoryStats device;
  std::optional<uint64_t> predicted_peak_bytes;
  engine::CategoryBytes predicted_device{};
  engine::MemoryStats host;
  engine::CategoryBytes predicted_host{};
  engine::CategoryBytes nvme{};  // the swap files' sizes
  engine::CategoryBytes predicted_nvme{};
  // This rank's swap-file reads and writes over the run (empty without NVMe offload).
  struct IoTotals {
    uint64_t requests = 0, bytes = 0;
    double seconds = 0;  // summed request times (start to end)
    double gbps() const { return seconds > 0 ? double(bytes) / seconds * 1e-9 : 0.0; }
  };
  std::array<IoTotals, profiler::kIoKindCount> io{};

  uint64_t nvme_total() const;
  nlohmann::json to_json() const;
};

// Message bytes per collective kind (all_reduce, reduce_scatter, all_gather,
// broadcast, barrier, send, recv, all_to_all).
using CollectiveBytes = std::array<double, profiler::kCollectiveKindCount>;

struct CommunicationReport {
  double exposed_ms_per_step = 0.0;  // this rank's, averaged over the steps
  CollectiveBytes bytes_per_step{};  // this rank's, from the communicator's counters
  // The same per communicator group (Engine::comm_counters_by_group), when there
  // are several.
  std::vector<std::pair<std::string, CollectiveBytes>> bytes_by_group;

  nlohmann::json to_json() const;
};

// Pipeline stages: this rank's (rank 0: the first stage's) median share of the
// schedule spent waiting on transfers, every rank's, and 1F1B's closed form
// (p−1)/(m+p−1). No keys with one stage.
struct PipelineReport {
  int stages = 1;
  double waiting_fraction = 0.0;
  std::vector<double> waiting_by_rank;  // in rank order
  double bubble_closed_form = 0.0;

  nlohmann::json to_json() const;
};

// Synthetic data: its measured unigram entropy and analytic entropy rate (nats);
// no keys for real data.
struct DataReport {
  double unigram_entropy = std::numeric_limits<double>::quiet_NaN();
  double entropy_rate = std::numeric_limits<double>::quiet_NaN();

  nlohmann::json to_json() const;
};

struct TrainSummary {
  profiler::RunStatus status = profiler::RunStatus::ok;  // ok | oom | config_error | failed
  std::string error_kind;                                // e.g. OutOfMemoryError
  std::string error;
  TrainingReport training;
  ThroughputReport throughput;
  MemoryReport memory;
  CommunicationReport comm;
  PipelineReport pipeline;
  DataReport data;
  int64_t run_id = 0;
  int world_size = 1;
  nlohmann::json gemm;  // the CPU GEMM providers (engine/cpu_gemm.h); null on a GPU
  int rank = 0;         // who produced it: only rank 0 writes the result file
  nlohmann::json rollouts = nlohmann::json::array();  // hybrid.rollout's breakdowns (rollout.h)
  // hybrid.data.val_every: [{"step", "loss"}], the validation loss after those steps.
  nlohmann::json val_losses = nlohmann::json::array();
  // Documents as units: per step {"step", "lr", "sequences", "tokens",
  // "padding"} (documents, real and padding tokens over every rank).
  nlohmann::json batches = nlohmann::json::array();

  nlohmann::json to_json() const;
};

// Writes the summary atomically (the --result file; nothing for an empty path).
void write_train_result(const std::string& path, const TrainSummary& s);

// The closing lines of a run: steps, rates, loss, and the peak memory.
std::vector<std::string> summary_lines(const TrainSummary& s);

}  // namespace hybrid
