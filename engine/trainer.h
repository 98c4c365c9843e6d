// The training driver behind hybrid-train (and the benchmarks and autotuner
// trials that run it): data, the loop, logging, checkpoints, the run store and
// the structured result.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/config/config.h"
#include "engine/train_summary.h"

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

// Runs the whole job; never throws for training failures (they land in the
// summary), only for programming errors.
TrainSummary run_training(const engine::Config& cfg, const TrainOptions& opts);

// Model FLOPs of one optimizer step over the global batch, as the issue's
// benchmarks count them: (6·N + 6·L·C·T) per token, N the parameters that
// multiply activations (CausalLM::matmul_params).
double model_flops_per_step(const engine::Config& cfg, int64_t matmul_params, int world_size);

}  // namespace hybrid
