// hybrid-bench's readers: Google Benchmark JSON (compare's baseline and current
// files, a run's rounds) and the suites file (--suites). The same bytes go to
// both. The only error allowed is the std::runtime_error they document, naming
// the file; a std::logic_error or a JSON library exception escaping is a bug.
#include <stdexcept>

#include "bench/compare/benchmark_file.h"
#include "bench/compare/suite.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hybrid::fuzz::write_input("bench.json", data, size);
  try {
    const auto file = hybrid::bench::load_benchmark_file(path);
    for (const auto& b : file.benchmarks) (void)file.find(b.name);
  } catch (const std::logic_error&) {
    throw;
  } catch (const std::runtime_error& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  try {
    (void)hybrid::bench::load_suites(path);
  } catch (const std::logic_error&) {
    throw;
  } catch (const std::runtime_error& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  return 0;
}
