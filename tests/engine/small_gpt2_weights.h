// A small GPT-2 in llm.c's tensor layout for the weight-format tests (llm.c
// files, Hugging Face directories): maxT 16, V 50, Vp 64, L 2, NH 2, C 8, every
// tensor filled with distinct normal(0, 0.5) values from `seed`.
#pragma once

#include <random>

#include "engine/model/gpt2/llmc_checkpoint.h"

namespace hybrid::test {

inline engine::Gpt2Weights small_gpt2_weights(uint32_t seed) {
  engine::Gpt2Weights w;
  w.max_seq_len = 16, w.vocab_size = 50, w.padded_vocab_size = 64;
  w.num_layers = 2, w.num_heads = 2, w.channels = 8;
  w.allocate();
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  for (auto* t : w.tensors())
    for (float& x : *t) x = dist(rng);
  return w;
}

}  // namespace hybrid::test
