// The gcc build's stand-in for libFuzzer's driver: feeds every file named on the
// command line (or found in a named directory) to the harness's
// LLVMFuzzerTestOneInput once. A harness aborts on anything but the reader's
// named error, so this exits 0 only when every input was handled cleanly.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay %s (%zu bytes)\n", file.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    if (!std::filesystem::is_directory(arg)) {
      replay(arg), ++inputs;
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(arg))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) replay(f), ++inputs;
  }
  if (inputs == 0) {
    std::fprintf(stderr, "replay: no input files\n");
    return 1;
  }
  std::fprintf(stderr, "replay: %zu inputs handled\n", inputs);
  return 0;
}
