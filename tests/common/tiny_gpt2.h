// The tiny GPT-2 the suites train (engine, autotuner, MPI tests): small enough
// for a step in milliseconds.
#pragma once

#include <nlohmann/json.hpp>

namespace hybrid::test {

// The config's hybrid.model block: 2 blocks of 32 channels, 2 heads, a 64-token
// vocabulary, 16 positions.
inline nlohmann::json tiny_gpt2_model() {
  return {{"type", "gpt2"}, {"n_layer", 2},     {"n_embd", 32},
          {"n_head", 2},    {"vocab_size", 64}, {"seq_len", 16}};
}

}  // namespace hybrid::test
