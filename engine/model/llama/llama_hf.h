// Hugging Face LlamaForCausalLM directories (config.json + model.safetensors or
// an index of shards) to and from the engine's flat parameters.
//
// HF keeps q_proj, k_proj and v_proj apart and gate_proj and up_proj apart;
// our qkv_proj and gate_up_proj stack them by rows (the rotate-half layout of
// q and k is HF's own, so no permutation). embed_tokens and an untied lm_head
// hold the real vocabulary's rows (our padded rows stay 0); a tied lm_head is
// not written, and when a file has one it must equal embed_tokens. The rotary
// inv_freq buffers older files carry are skipped; any other tensor we do not
// know is refused, naming it.
#pragma once

#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/model/module.h"

namespace hybrid::engine {

// The whole model's flat parameters (tree.full_param_count()) from `dir`.
std::vector<float> read_llama_hf(const std::string& dir, const ModelConfig& m,
                                 const ModuleTree& tree);
// config.json and the safetensors file(s) (fp32, {"format": "pt"}) of `flat`.
void write_llama_hf(const std::string& dir, const ModelConfig& m, const ModuleTree& tree,
                    const std::vector<float>& flat);

}  // namespace hybrid::engine
