#include "engine/model/families.h"

#include "engine/model/gpt2/gpt2_hf.h"
#include "engine/model/llama/llama_config.h"

namespace hybrid::engine {

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> all = {
      {"gpt2", {"GPT2LMHeadModel", "gpt2"}, gpt2_model_config_from_hf, gpt2_refusal},
      {"llama", {"LlamaForCausalLM", "llama"}, llama_model_config_from_hf, llama_refusal},
  };
  return all;
}

std::string model_refusal(const ModelConfig& m) {
  for (const FamilyInfo& f : families())
    if (m.type == f.type) return f.refusal(m);
  return "";
}

std::vector<std::string> model_types() {
  std::vector<std::string> out;
  for (const FamilyInfo& f : families()) out.emplace_back(f.type);
  return out;
}

}  // namespace hybrid::engine
