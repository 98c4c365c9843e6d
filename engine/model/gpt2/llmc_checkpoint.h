// llm.c GPT-2 checkpoints (train_gpt2.c / train_gpt2.cu): a header of 256 int32
// — [0] magic 20240326, [1] version (3: fp32 parameters, 5: bf16 parameters),
// [2] max_seq_len, [3] vocab_size, [4] num_layers, [5] num_heads, [6] channels,
// [7] padded_vocab_size — then the 16 parameter tensors in llm.c's order, each
// with all layers concatenated:
//   wte (Vp·C), wpe (maxT·C), ln1w (L·C), ln1b (L·C), qkvw (L·3C·C), qkvb (L·3C),
//   attprojw (L·C·C), attprojb (L·C), ln2w (L·C), ln2b (L·C), fcw (L·4C·C),
//   fcb (L·4C), fcprojw (L·C·4C), fcprojb (L·C), lnfw (C), lnfb (C).
// Weights are held in fp32 here whatever the file's version; the engine maps
// them onto its own module-ordered flat buffer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine {

inline constexpr int32_t kLlmcCheckpointMagic = 20240326;
inline constexpr int32_t kLlmcVersionFp32 = 3;
inline constexpr int32_t kLlmcVersionBf16 = 5;
inline constexpr size_t kLlmcTensorCount = 16;

struct Gpt2Weights {
  int max_seq_len = 0;        // maxT
  int vocab_size = 0;         // V
  int padded_vocab_size = 0;  // Vp >= V (rows V..Vp-1 of wte are padding)
  int num_layers = 0;         // L
  int num_heads = 0;          // NH
  int channels = 0;           // C

  std::vector<float> wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb,
      fcprojw, fcprojb, lnfw, lnfb;

  static constexpr std::array<std::string_view, kLlmcTensorCount> tensor_names = {
      "wte",  "wpe",  "ln1w", "ln1b", "qkvw",    "qkvb",    "attprojw", "attprojb",
      "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",     "lnfb"};

  // Element counts of the 16 tensors for this shape, in file order.
  std::array<size_t, kLlmcTensorCount> tensor_sizes() const;
  size_t num_parameters() const;
  // The tensors in file order.
  std::array<std::vector<float>*, kLlmcTensorCount> tensors();
  std::array<const std::vector<float>*, kLlmcTensorCount> tensors() const;
  // Sizes every tensor for the shape, zero-filled.
  void allocate();
  // Throws std::invalid_argument when the shape is impossible (non-positive,
  // Vp < V, C not divisible by NH) or a tensor's size does not match it.
  void validate() const;
};

// Reads and validates a checkpoint (bf16 parameters are widened exactly).
// Throws DataFileError naming the file and what is wrong: missing file, bad
// magic, unknown version, impossible header, truncated or oversized payload.
Gpt2Weights read_llmc_checkpoint(const std::string& path);

// Writes a checkpoint atomically (temporary file, fsync, rename). version 3
// stores fp32, version 5 bf16 (round to nearest even).
void write_llmc_checkpoint(const std::string& path, const Gpt2Weights& weights,
                           int version = kLlmcVersionFp32);

// Between a header's shape and the GPT-2 config it describes: zero-filled
// weights for `m` with wte padded to `padded_vocab` rows, and a header's config.
Gpt2Weights gpt2_weights_for(const ModelConfig& m, int padded_vocab);
ModelConfig gpt2_config_of(const Gpt2Weights& w);

}  // namespace hybrid::engine
