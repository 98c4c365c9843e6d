// Checkpoint I/O: the training state in and out of the Engine.
//
// Owns what a checkpoint holds and how this rank's part of it is found:
// save_checkpoint / load_checkpoint (meta.json, this rank's partition of the
// fp32 master weights and the optimizer state, the flat range each rank
// saves, the check that a checkpoint is this model's, and reading any saved
// tensor-parallel or pipeline layout into this one), and the whole model's
// fp32 weights (gather_parameters / set_parameters: the full checkpoint's
// model file, hybrid.init_from) put together from, and cut into, this rank's
// pieces. The file formats are engine/checkpoint/; what a resume restores
// beyond the weights is TrainingProgress and the loss scaler.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/checkpoint_owner.h"
#include "engine/config/config.h"
#include "engine/model/causal_lm.h"
#include "engine/optim/optimizer.h"
#include "engine/precision/loss_scaler.h"
#include "engine/runtime/device_runtime.h"
#include "engine/runtime/pipeline_runner.h"
#include "engine/zero/zero_runtime.h"

namespace hybrid::engine {

// What save_checkpoint writes beyond the resume state (the partition files with
// fp32 master weights and optimizer state, and meta.json).
struct CheckpointSaveOptions {
  // A "full" checkpoint: also DIR/TAG/model.bin, every weight in fp32 in llm.c's
  // format (hybrid.init_from, llm.c and hybrid-ckpt read it). Gathers the weights
  // (collective).
  bool full = false;
  bool save_latest = true;  // point DIR/latest at the tag, as DeepSpeed's save_latest
  // Testing: called on every rank once the files are complete, before meta.json
  // and latest are written.
  std::function<void()> before_publish;
};

// The step counters and the lineage: what a checkpoint saves and a resume
// restores besides the weights, the optimizer state and the loss scaler.
struct TrainingProgress {
  int64_t global_step = 0;
  int64_t applied_steps = 0;
  int64_t skipped_steps = 0;
  // The data loader's position (documents as units; null otherwise): the
  // trainer's, saved as the meta's "data_position".
  nlohmann::json data_position;
  // The optimizer's scalar_state as a load found it in the meta (null: none);
  // a save writes the optimizer's own.
  nlohmann::json optimizer_scalars;
  // A fresh run's own; a resumed run continues its checkpoint's (keep_last
  // rotates only this lineage's tags).
  std::string lineage = new_lineage();
};

class CheckpointIO {
 public:
  // `pipeline`: null without pipeline stages.
  CheckpointIO(const Config& cfg, DeviceRuntime& runtime, CausalLM& model, const ModuleTree& tree,
               const Optimizer& optimizer, ZeroRuntime& zero, const PipelineRunner* pipeline);

  // Collective. tag "": "global_step<N>". Returns the tag saved.
  std::string save(const std::string& dir, const std::string& tag, const CheckpointSaveOptions& o,
                   const TrainingProgress& progress, const LossScaler& scaler);
  // Collective. tag "" reads the `latest` file. Sets the weights, the optimizer
  // state, `progress` and (fp16, same kind) `scaler`. Returns the tag loaded.
  std::string load(const std::string& dir, const std::string& tag, TrainingProgress& progress,
                   LossScaler& scaler);

  // Every parameter in fp32, the whole model's (collective: all ranks must call).
  std::vector<float> gather_parameters();
  // Sets every parameter from the whole model's fp32 values (a tensor-parallel
  // rank takes its pieces); optimizer state is reset.
  void set_parameters(const std::vector<float>& flat);

 private:
  // The flat range rank `rank`'s checkpoint partition holds.
  FlatRange saved_range(int rank) const;
  nlohmann::json saved_partitions() const;  // meta.json's partitions: every rank's range
  nlohmann::json meta(const std::string& tag, bool full, const TrainingProgress& progress,
                      const LossScaler& scaler) const;
  PartitionData partition(FlatRange range) const;  // this rank's master weights and state
  // Throws CheckpointError unless the checkpoint was saved for this model.
  void check_same_model(const nlohmann::json& meta, const std::string& where) const;
  void check_same_optimizer(const nlohmann::json& meta, const std::string& where) const;
  // Master weights and optimizer state of `range` from a checkpoint, whatever
  // its tensor-parallel size or pipeline partition.
  void read_saved_state(const std::string& dir, const std::string& tag, const nlohmann::json& meta,
                        FlatRange range, float* master, float* state);
  // This rank's optimizer range read on every rank; a failure anywhere throws on all.
  void read_all_ranks(const std::string& dir, const std::string& tag, const nlohmann::json& meta,
                      const std::string& where, std::vector<float>& master,
                      std::vector<float>& state);

  const Config& cfg_;
  DeviceRuntime& runtime_;
  CausalLM& model_;
  const ModuleTree& tree_;
  const Optimizer& optimizer_;
  ZeroRuntime& zero_;
  const PipelineRunner* pipeline_;
};

}  // namespace hybrid::engine
