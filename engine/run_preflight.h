// What a training run checks before it builds anything: the cheap checks of the
// user's arguments come before the engine's allocations, GEMM measurements and
// steps, so that a bad output path or a checkpoint folder of another model
// fails in a second with a message that names it, not after training.
#pragma once

#include <stdexcept>

#include "engine/config/config.h"
#include "engine/trainer.h"

namespace hybrid {

// A command-line argument that cannot work (hybrid-train exits 2, status
// config_error, like a config error: the user's input is at fault).
class ArgumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every output path of the run: the checkpoint folder (--save or
// hybrid.checkpoint.dir), --export-llmc and --result must be writable (or
// creatable) and of the right kind; the checkpoint folder must not hold another
// model's checkpoints; the model must have the exported formats (llm.c's holds
// GPT-2 only). Throws ArgumentError naming the option and the path.
// (--db is opened, and so checked, before this by the run recorder.)
void check_run_outputs(const engine::Config& cfg, const TrainOptions& opts);

// The run's inputs that can be checked before anything is built: a Hugging
// Face hybrid.init_from's safetensors headers (every shard's, validated before
// any tensor is read: a truncated or damaged file fails here, naming it).
void check_run_inputs(const engine::Config& cfg);

}  // namespace hybrid
