// Hugging Face GPT2LMHeadModel directories (config.json + model.safetensors or
// an index of shards) to and from llm.c's tensor layout (Gpt2Weights), which
// the engine already maps onto its flat parameters.
//
// Tensor names with or without the "transformer." prefix; the causal-mask
// buffers published files carry (attn.bias, attn.masked_bias) are skipped;
// lm_head.weight, when present, must equal wte (GPT-2 ties them). HF's Conv1D
// stores weights [in, out], llm.c and our modules [out, in]: transposed here.
// The architectures GPT-2 variants use that we do not run (another activation,
// layer-norm epsilon, inner width, untied head, attention scaling by layer) are
// refused, naming the key and both values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/config/config.h"
#include "engine/model/gpt2/llmc_checkpoint.h"

namespace hybrid::engine {

// hybrid.model from a GPT-2 config.json (`path` names it in errors).
ModelConfig gpt2_model_config_from_hf(const nlohmann::json& config, const std::string& path);
// What GPT-2 does not vary (key/value heads, MLP width, untied embeddings,
// rotary positions, another epsilon), named: "" when `m` is a GPT-2.
std::string gpt2_refusal(const ModelConfig& m);
// config.json for `m`.
nlohmann::json gpt2_hf_config(const ModelConfig& m);

// The weights of the directory, with wte padded by zero rows to `padded_vocab`.
Gpt2Weights read_gpt2_hf(const std::string& dir, const ModelConfig& m, int padded_vocab);
// Writes config.json and the safetensors file(s) (fp32, {"format": "pt"}),
// wte cut to the real vocabulary.
void write_gpt2_hf(const std::string& dir, const Gpt2Weights& w);

}  // namespace hybrid::engine
