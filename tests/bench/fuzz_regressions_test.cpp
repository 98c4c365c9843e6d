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

std::string load_error(const std::string& name, bool suites = false) {
  const std::string file = std::string(HYBRID_SOURCE_DIR) + "/fuzz/regressions/bench_json/" + name;
  try {
    if (suites)
      load_suites(file);
    else
      load_benchmark_file(file);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// json::value(key, default) throws type_error when the key holds another type: a
// result's run_name, threads, error_occurred, error_message or time_unit, and a
// suite's description, escaped as JSON library exceptions.
TEST(BenchFuzzRegressions, OptionalFieldsOfTheWrongTypeNameTheBenchmarkAndKey) {
  EXPECT_THAT(load_error("run_name_is_a_number.json"),
              testing::EndsWith(": benchmark 'm': \"run_name\" has the wrong type: 7"));
  EXPECT_THAT(load_error("threads_is_a_string.json"),
              testing::EndsWith(": benchmark 'm': \"threads\" has the wrong type: \"1\""));
  EXPECT_THAT(load_error("suite_description_is_a_number.json", true),
              testing::EndsWith(
                  "suite_description_is_a_number.json: suites.ci.description must be a string"));
}

}  // namespace
}  // namespace hybrid::bench
