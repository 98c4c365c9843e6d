// A Hugging Face directory's config.json as hybrid.init_from and hybrid-ckpt
// read it: the architecture looked up among the families, then the family's
// reader (GPT2LMHeadModel, LlamaForCausalLM) maps it to a hybrid.model or
// refuses what it does not run. The only error allowed is DataFileError
// naming the file.
#include <filesystem>

#include "engine/data/data_file_error.h"
#include "engine/model/hf_directory.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::engine;
  const auto dir = hybrid::fuzz::scratch_dir() / "hf";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  hybrid::fuzz::write_bytes(path, data, size);
  try {
    const ModelConfig m = read_hf_model_config(dir.string());
    if (m.n_layer < 1 || m.n_embd < 1 || m.n_head < 1 || m.n_embd % m.n_head != 0 ||
        m.vocab_size < 1 || m.seq_len < 1 || m.kv_heads() < 1 || m.n_head % m.kv_heads() != 0)
      std::abort();  // a reader accepted a model no family can build
  } catch (const DataFileError& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  return 0;
}
