// hybrid_engine.inference_tp_size: DeepSpeed's hybrid engine generates with
// the training weights resharded over groups of inference_tp_size ranks, each
// group splitting every layer Megatron's way, whatever ZeRO stage trains them.
// Here the replica is a second engine over the same ranks, built once at the
// first generate, with tensor_model_parallel_size = inference_tp_size and
// nothing to train (ZeRO 0, SGD without state). Each call copies the trainer's
// current weights into it (the gather), gathers the group's prompts so that
// the group generates them together, and gives each rank its own rows back:
// the tokens of generating on each rank alone, greedy or seeded.
#pragma once

#include <memory>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/config/config.h"
#include "engine/generate/generator.h"

namespace hybrid {

class Engine;

class InferenceReplica {
 public:
  // Collective over the trainer's ranks.
  explicit InferenceReplica(Engine& trainer);
  ~InferenceReplica();
  // Collective; `prompts` are this rank's. Every rank of a group must give the
  // same max_new_tokens, sampling, stop tokens and cache dtype (std::invalid_argument on
  // every rank otherwise).
  engine::GenerationResult generate(const std::vector<std::vector<int>>& prompts,
                                    const engine::GenerationParams& params);

  // The replica's config: the trainer's, split inference_tp_size ways, without
  // the training machinery.
  static engine::Config config_for(const engine::Config& trainer, int world_size);

 private:
  Engine& trainer_;
  std::unique_ptr<Engine> replica_;
  // The replica's tensor-parallel group on the trainer's host communicator:
  // prompts and tokens travel there.
  std::unique_ptr<engine::comm::Communicator> group_;
};

}  // namespace hybrid
