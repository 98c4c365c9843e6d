// Inputs the fuzzer found in hybrid-bench's readers (fuzz/fuzz_bench_json.cpp,
// fuzz/regressions/bench_json/): each must fail with the std::runtime_error that
// names the file, not escape as a JSON library exception.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "bench/compare/benchmark_file.h"
#include "bench/compare/suite.h"

namespace hybrid::bench {
namespace {

const std::string kOverflow =
    std::string(HYBRID_SOURCE_DIR) + "/fuzz/regressions/bench_json/number_overflow.json";

// nlohmann/json throws out_of_range, not parse_error, for a number beyond double:
// read_json_file caught only the latter, so both readers let it escape.
TEST(BenchFuzzRegressions, NumberBeyondDoubleIsNotValidJsonNamingTheFile) {
  const std::string expected = kOverflow + ": not valid JSON (";
  try {
    load_benchmark_file(kOverflow);
    FAIL() << "loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), testing::StartsWith(expected));
    EXPECT_THAT(e.what(), testing::HasSubstr("number overflow parsing '1e999'"));
  }
  try {
    load_suites(kOverflow);
    FAIL() << "loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), testing::StartsWith(expected));
  }
}

}  // namespace
}  // namespace hybrid::bench
