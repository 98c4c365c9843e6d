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
// model's checkpoints. Throws ArgumentError naming the option and the path.
// (--db is opened, and so checked, before this by the run recorder.)
void check_run_outputs(const engine::Config& cfg, const TrainOptions& opts);

}  // namespace hybrid
