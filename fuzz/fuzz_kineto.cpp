// hybrid-prof import-kineto: one PyTorch profiler trace (.json or .json.gz, told
// apart by its bytes) read, translated into a run and analysed (the GPU timeline),
// everything but the store write. The only error allowed is ImportError naming
// the file.
#include "fuzz/fuzz_support.h"
#include "profiler/gpu_timeline.h"
#include "profiler/import/kineto_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::profiler;
  const std::string path = hybrid::fuzz::write_input("rank0.pt.trace.json", data, size);
  try {
    const std::filesystem::path files[] = {path};
    RunRecord record = import::import_kineto(files);
    analyze_gpu_run(record);
  } catch (const import::ImportError& e) {
    hybrid::fuzz::expect_mentions(e, "rank0.pt.trace.json");
  }
  return 0;
}
