// Pipeline parallelism's plan: which blocks each stage runs, and the order in
// which a stage runs its micro-batches (1F1B, as Megatron and DeepSpeed).
//
// 1F1B on stage s of p with m micro-batches: min(p−s−1, m) warm-up forwards,
// then one forward and one backward in turn, then the remaining backwards.
// A stage holds at most min(p−s, m) micro-batches' activations at once, and
// with equal forward and backward times the idle fraction of every stage is
// (p−1)/(m+p−1). Exchanges between neighbours are paired (a send with the
// receive the same step needs) so that two stages never wait on each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid::engine {

// Blocks [begin, end) of a stage.
struct StageBlocks {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};

// DeepSpeed's partition methods: "uniform" balances the number of blocks,
// "parameters" the number of parameters (the first stage also holds the
// embeddings, the last the final layernorm). Every stage gets at least one
// block. Throws std::invalid_argument naming pipeline.stages or
// pipeline.partition when that is impossible or unknown.
std::vector<StageBlocks> partition_blocks(int n_layer, int stages, const std::string& method,
                                          int64_t block_params, int64_t first_extra,
                                          int64_t last_extra);

// One step of a stage's schedule. A transfer moves the activation (forward) or
// its gradient (backward) of micro-batch `micro` across a stage boundary.
struct PipeStep {
  enum Kind : uint8_t {
    forward,                     // run micro-batch `micro` forward
    backward,                    // run micro-batch `micro` backward
    recv_forward,                // activation of `micro` from the previous stage
    send_forward,                // activation of `micro` to the next stage
    recv_backward,               // gradient of `micro` from the next stage
    send_backward,               // gradient of `micro` to the previous stage
    send_forward_recv_backward,  // activation of `micro` out, gradient of `other` in
    send_backward_recv_forward,  // gradient of `micro` out, activation of `other` in
  };
  Kind kind;
  int micro = 0;
  int other = -1;
  friend bool operator==(const PipeStep&, const PipeStep&) = default;
};
const char* pipe_step_name(PipeStep::Kind k);

// The 1F1B schedule of `stage` (0-based) of `stages` with `micro_batches`.
// Transfers to a neighbour that does not exist (before the first stage, after
// the last) are left out; a paired transfer with one side missing becomes a
// plain one.
std::vector<PipeStep> one_f_one_b(int stage, int stages, int micro_batches);

// Micro-batches whose activations stage `stage` holds at once under 1F1B.
inline int in_flight_micro_batches(int stage, int stages, int micro_batches) {
  const int depth = stages - stage;
  return depth < micro_batches ? depth : micro_batches;
}

// The idle share of each stage's step with equal per-micro-batch times:
// (p−1)/(m+p−1).
inline double bubble_fraction(int stages, int micro_batches) {
  return double(stages - 1) / double(micro_batches + stages - 1);
}

}  // namespace hybrid::engine
