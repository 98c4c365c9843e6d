// The training driver behind hybrid-train (and the benchmarks and autotuner
// trials that run it): data, the loop, logging, checkpoints, the run store and
// the structured result.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/config/config.h"
#include "engine/memory/layout.h"
#include "engine/memory/tracking_allocator.h"
#include "profiler/comm_record.h"
#include "profiler/profile_data.h"

namespace hybrid {

struct TrainOptions {
  int64_t steps = 0;  // 0: config's hybrid.steps, else 20
  std::string db;     // run store (SQLite); empty: none
  std::string run_name;
  // Checkpoints (engine/checkpoint/save_policy.h): save_dir and save_every
  // override hybrid.checkpoint.dir and .optimizer_interval when given.
  std::string save_dir;  // checkpoint at the end (and on the policy's intervals)
  int64_t save_every = 0;
  std::string load_dir;  // resume from DIR/latest (or load_tag)
  std::string load_tag;
  std::string result_path;    // JSON summary (rank 0), written even on failure
  std::string export_path;    // final fp32 weights, consolidated, in llm.c's checkpoint format
  std::string export_hf_dir;  // the same as a Hugging Face directory (config.json + safetensors)
  bool quiet = false;
  // Called after each step (numbered from 1) once its checkpoint is saved; e.g.
  // hybrid-train's --kill-after-step, which tests use to crash a run mid-way.
  std::function<void(int64_t step)> after_step;
  // Called inside the checkpoint of a step once its files are complete, before
  // meta.json and latest are written; e.g. hybrid-train's --kill-mid-save.
  std::function<void(int64_t step)> before_publish;
};

struct TrainSummary {
  profiler::RunStatus status = profiler::RunStatus::ok;  // ok | oom | config_error | failed
  std::string error_kind;                                // e.g. OutOfMemoryError
  std::string error;
  int64_t steps = 0;  // steps run by this invocation
  int64_t global_step = 0;
  double final_loss = 0.0;
  std::vector<double> losses;  // per step, averaged over ranks
  double ms_per_step_median = 0.0;
  double tokens_per_s = 0.0;
  double samples_per_s = 0.0;
  double flops_per_step = 0.0;  // model FLOPs: (6·N + 6·L·C·T)·B·T (model_flops_per_step)
  double achieved_flops_per_s = 0.0;
  int64_t skipped_steps = 0;
  double exposed_comm_ms_per_step = 0.0;
  engine::MemoryStats memory;
  std::optional<uint64_t> predicted_peak_bytes;
  std::array<uint64_t, engine::kMemCategoryCount> predicted_memory{};  // by category
  // Host memory of an offloaded optimizer (zero without offload), measured and predicted.
  engine::MemoryStats host_memory;
  std::array<uint64_t, engine::kMemCategoryCount> predicted_host_memory{};
  // NVMe swap files (zero without NVMe offload), measured (file sizes) and predicted.
  engine::CategoryBytes nvme_bytes{};
  std::array<uint64_t, engine::kMemCategoryCount> predicted_nvme_bytes{};
  // This rank's swap-file reads and writes over the run (empty without NVMe offload).
  struct IoTotals {
    uint64_t requests = 0, bytes = 0;
    double seconds = 0;  // summed request times (start to end)
    double gbps() const { return seconds > 0 ? double(bytes) / seconds * 1e-9 : 0.0; }
  };
  std::array<IoTotals, profiler::kIoKindCount> io{};
  // Message bytes per optimizer step by collective kind (all_reduce, reduce_scatter,
  // all_gather, broadcast, barrier, send, recv), from the communicator's counters.
  // Pipeline stages: this rank's (rank 0: the first stage's) median share of the
  // schedule spent waiting on transfers, and 1F1B's closed form (p−1)/(m+p−1).
  int pipeline_stages = 1;
  double pipeline_waiting_fraction = 0.0;
  std::vector<double> pipeline_waiting_by_rank;  // every rank's, in rank order
  double pipeline_bubble_closed_form = 0.0;
  std::array<double, profiler::kCollectiveKindCount> comm_bytes_per_step{};  // this rank's
  // The same per communicator group (Engine::comm_counters_by_group), with a pipeline.
  std::vector<std::pair<std::string, std::array<double, profiler::kCollectiveKindCount>>>
      comm_bytes_by_group;
  // Synthetic data: its measured unigram entropy and analytic entropy rate (nats).
  double unigram_entropy = std::numeric_limits<double>::quiet_NaN();
  double entropy_rate = std::numeric_limits<double>::quiet_NaN();
  int64_t run_id = 0;
  int world_size = 1;
  nlohmann::json gemm;  // the CPU GEMM providers (engine/cpu_gemm.h); null on a GPU
  int rank = 0;         // who produced it: only rank 0 writes the result file

  nlohmann::json to_json() const;
  void add_comm_json(nlohmann::json& j) const;  // part of to_json
};

// Runs the whole job; never throws for training failures (they land in the
// summary), only for programming errors.
TrainSummary run_training(const engine::Config& cfg, const TrainOptions& opts);

// Writes the summary atomically (the --result file).
void write_train_result(const std::string& path, const TrainSummary& s);

// Model FLOPs of one optimizer step over the global batch, as the issue's
// benchmarks count them: (6·N + 6·L·C·T) per token, N the parameters that
// multiply activations (CausalLM::matmul_params).
double model_flops_per_step(const engine::Config& cfg, int64_t matmul_params, int world_size);

}  // namespace hybrid
