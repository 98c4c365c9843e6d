// llm.c GPT-2 checkpoints (fp32 or bf16) as hybrid-data and the engine's
// --init_from read them. The only error allowed is DataFileError naming the file;
// a header whose shape asks for more bytes than the file holds must be refused
// before anything is allocated.
#include "engine/data/data_file_error.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::engine;
  const std::string path = hybrid::fuzz::write_input("gpt2.bin", data, size);
  try {
    const Gpt2Weights w = read_llmc_checkpoint(path);
    w.validate();
  } catch (const DataFileError& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  return 0;
}
