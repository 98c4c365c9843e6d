#include "engine/model/registry.h"

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <stdexcept>

#include "engine/model/gpt2/gpt2.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine/model/hf_directory.h"
#include "engine/model/llama/llama.h"

namespace hybrid::engine {

namespace {

using Factory = std::function<std::unique_ptr<CausalLM>(const ModelConfig&, int, TensorSlice)>;

struct Family {
  const char* type;  // a type of families.cpp
  Factory make;
};

template <class Model>
Factory factory() {
  return [](const ModelConfig& m, int padded_vocab, TensorSlice tp) {
    return std::make_unique<Model>(m, padded_vocab, tp);
  };
}

// One line per family.
const std::vector<Family>& factories() {
  static const std::vector<Family> all = {
      {"gpt2", factory<GPT2>()},
      {"llama", factory<Llama>()},
  };
  return all;
}

}  // namespace

std::unique_ptr<CausalLM> make_model(const ModelConfig& m, int padded_vocab, TensorSlice tp) {
  for (const Family& f : factories())
    if (m.type == f.type) return f.make(m, padded_vocab, tp);
  std::string known;
  for (const std::string& t : model_types()) known += (known.empty() ? "" : ", ") + t;
  throw std::invalid_argument(
      fmt::format("model type '{}' is not one hybrid builds (known: {})", m.type, known));
}

std::optional<StoredModel> stored_model_in(const std::string& path) {
  if (is_hf_directory(path)) {
    const ModelConfig m = read_hf_model_config(path);
    return StoredModel{m, (m.vocab_size + 127) / 128 * 128, "Hugging Face"};
  }
  int32_t magic = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(&magic), sizeof magic) || magic != kLlmcCheckpointMagic)
    return std::nullopt;
  // llm.c's format holds GPT-2 only.
  const Gpt2Weights w = read_llmc_checkpoint(path);
  return StoredModel{gpt2_config_of(w), w.padded_vocab_size, "llm.c"};
}

}  // namespace hybrid::engine
