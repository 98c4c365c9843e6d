// Hugging Face safetensors files as hybrid.init_from and hybrid-ckpt read them:
// the mapped file, its header validated before any tensor is touched, then every
// tensor widened to fp32 where its dtype allows. The only error allowed is
// DataFileError naming the file.
#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::engine;
  const std::string path = hybrid::fuzz::write_input("model.safetensors", data, size);
  try {
    SafetensorsFile f(path);
    for (const StTensor& t : f.tensors()) {
      if (t.dtype == StDType::F32 || t.dtype == StDType::F16 || t.dtype == StDType::BF16)
        (void)f.read_f32(t);
    }
  } catch (const DataFileError& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  return 0;
}
