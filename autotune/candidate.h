// Candidates: the points of a search space applied to a base ds_config.json.
// Each is a complete config that hybrid-train runs as is (the autotuning block
// removed, the batch triad made consistent for the world size), checked by the
// engine's own parse_config, with a stable key naming the point
// ("mbs=4,gas=2,stage=1,rbs=50000000") so a resumed sweep finds its trials.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/autotuning_options.h"
#include "autotune/space.h"
#include "engine/config/config.h"

namespace hybrid::autotune {

struct Candidate {
  std::string key;
  nlohmann::json config;  // the complete ds_config.json of the trial
  engine::Config parsed;  // parse_config(config, world_size)
  int world_size = 1;
  int stage() const { return parsed.zero.stage; }
  int micro_batch() const { return parsed.train_micro_batch_size_per_gpu; }
  int grad_accum() const { return parsed.gradient_accumulation_steps; }
  int train_batch() const { return parsed.train_batch_size; }
};

// A point that cannot be a trial: an impossible batch, a value the engine
// rejects, a setting the backend cannot use.
struct DroppedCandidate {
  std::string key;
  nlohmann::json config;
  std::string reason;
};

struct Enumeration {
  std::vector<Candidate> candidates;  // grid order: first axis slowest
  std::vector<DroppedCandidate> dropped;
  std::vector<std::string> notes;
};

struct EnumerateOptions {
  int world_size = 1;
  bool offload_supported = false;  // the trial backend can offload (not the CPU)
  std::optional<int64_t> max_train_batch_size;
};

// Base config: the user's ds_config.json (its "autotuning" block is removed from
// every candidate). Batch: with a train_batch_size axis, or a base config that
// gives train_batch_size and a space that varies neither it nor accumulation,
// the global batch is fixed and accumulation derived; otherwise accumulation is
// the axis value or the base config's, and the global batch follows.
Enumeration enumerate_candidates(const nlohmann::json& base, const SearchSpace& space,
                                 const EnumerateOptions& opts);

// The base config with the autotuning block removed and values set at dotted
// paths (zero_optimization given as a boolean becomes an object).
nlohmann::json without_autotuning(const nlohmann::json& config);
void set_path(nlohmann::json& config, const std::string& dotted, const nlohmann::json& value);

}  // namespace hybrid::autotune
