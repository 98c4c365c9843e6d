// hybrid.rollout: generation inside hybrid-train's loop on the weights being
// trained, DeepSpeed-Chat's pattern (generate, then train on it) with the
// hybrid engine's breakdown of each iteration: from one rollout's end to the
// next's, how long went to gathering parameters, generating, training and
// everything else (checkpoints, logging), and the samples (prompts, over all
// ranks) per second.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "profiler/generation_data.h"

namespace hybrid {

class Engine;

struct RolloutBreakdown {
  int64_t step = 0;        // the optimizer step it followed
  int64_t samples = 0;     // prompts generated from, over all data-parallel ranks
  int64_t new_tokens = 0;  // over all ranks
  double e2e_ms = 0, gather_ms = 0, generate_ms = 0, train_ms = 0, other_ms = 0;
  double samples_per_s = 0;              // this iteration's
  double avg_samples_per_s = 0;          // over the iterations so far
  std::vector<std::vector<int>> tokens;  // rank 0's: its prompts' new tokens
  std::vector<std::string> texts;        // those tokens decoded, with a tokenizer
  int batch = 0;                         // rows each rank decodes together (a call's)
  int64_t prompt_tokens = 0;             // over all ranks' prompts
  std::vector<double> ttft_ms, tpot_ms;  // rank 0's (GenerationResult)

  // DeepSpeed's hybrid-engine line: |E2E latency=4.78s |Gather latency=0.00s (0.00%)
  // |Generate time=1.74s (36.47%) |Training time=2.82s (59.05%) |Others=0.21 (4.48%)
  // |CurSamplesPerSec=0.84 |AvgSamplesPerSec=1.03. Here the four parts sum to the
  // E2E latency (DeepSpeed's Others also holds the gather).
  std::string line() const;
  // What hybrid-train prints: a line naming the rollout, then line().
  std::vector<std::string> lines() const;
  // New tokens over the time spent gathering and generating (the run store's row's).
  double tokens_per_s() const;
  // With the batch, tokens_per_s and rank 0's ttft_ms and tpot_ms as
  // {p50, p90, p99, samples} (null without samples).
  nlohmann::json to_json() const;
};

// The model as the run store's generation rows name it: "gpt2 124.44 M"
// (hybrid-generate's rows and the rollouts' alike).
std::string generation_model_label(const engine::ModelConfig& m, int64_t params);
// Latencies (ms) as hybrid-generate's --json and the rollouts' --result write
// them: {p50, p90, p99, samples}, or null when there are none.
nlohmann::json latency_samples_json(const std::vector<double>& ms);

class Rollouts {
 public:
  // Reads this rank's share of the prompts (prompt i goes to data-parallel rank
  // i mod ranks; text ones encoded by hybrid.rollout.tokenizer, or by
  // hybrid.init_from's folder's tokenizer) and checks them against the engine's model before any
  // step runs: engine::ConfigError naming the file, line or prompt otherwise.
  Rollouts(const engine::Config& cfg, Engine& e);

  bool enabled() const { return cfg_.every > 0; }
  bool due(int64_t step) const { return enabled() && step % cfg_.every == 0; }
  // Starts the first iteration's clock (the loop's start).
  void start();
  void add_training(double ms) { train_ms_ += ms; }
  // Generates (collective over the ranks) and closes the iteration.
  RolloutBreakdown run(int64_t step);
  // b's `rollout` row of the run store's generations table.
  profiler::GenerationRow row(const RolloutBreakdown& b) const;

 private:
  using Clock = std::chrono::steady_clock;
  const engine::RolloutConfig& cfg_;
  Engine& engine_;
  std::unique_ptr<engine::Tokenizer> tokenizer_;  // for text prompts and texts; may be null
  std::vector<std::vector<int>> prompts_;         // this rank's
  int64_t prompt_tokens_ = 0;                     // over the whole file
  std::string model_label_, dtype_;               // "gpt2 124.44 M", "fp32"
  Clock::time_point iteration_start_;
  double train_ms_ = 0, total_e2e_ms_ = 0;
  int64_t iterations_ = 0;
};

}  // namespace hybrid
