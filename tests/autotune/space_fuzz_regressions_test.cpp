// Search spaces the fuzzer (fuzz/fuzz_tune_space.cpp) found mishandled, kept as
// files under fuzz/regressions/tune_space/ and results/examples/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/space.h"
#include "autotune/tune_error.h"

namespace hybrid::autotune {
namespace {

// ASan: the {"range": ...} form bound a reference into a temporary iterator
// (stack-use-after-scope) and read the form's name from dead stack memory. The
// shipped example space has that form twice.
TEST(SpaceFuzzRegressions, ExampleSpaceExpandsItsRangeAndPow2Forms) {
  const SearchSpace s =
      load_space(std::string(HYBRID_SOURCE_DIR) + "/results/examples/space-cpu.json");
  const Axis* stage = s.find("zero_optimization.stage");
  const Axis* mbs = s.find("train_micro_batch_size_per_gpu");
  ASSERT_NE(stage, nullptr);
  ASSERT_NE(mbs, nullptr);
  EXPECT_EQ(stage->values, (std::vector<nlohmann::json>{0, 1, 2, 3}));
  EXPECT_EQ(mbs->values, (std::vector<nlohmann::json>{1, 2, 4, 8, 16}));
}

// UBSan: a range ending at INT64_MAX stepped past it (signed overflow), and pow2
// up to INT64_MAX doubled 2^62 into overflow. Both are now counted exactly.
TEST(SpaceFuzzRegressions, RangesUpToInt64MaxDoNotOverflow) {
  const SearchSpace s = load_space(std::string(HYBRID_SOURCE_DIR) +
                                   "/fuzz/regressions/tune_space/int64_max_range_and_pow2.json");
  const Axis* reduce = s.find("zero_optimization.reduce_bucket_size");
  const Axis* gather = s.find("zero_optimization.allgather_bucket_size");
  ASSERT_NE(reduce, nullptr);
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(reduce->values, (std::vector<nlohmann::json>{INT64_MAX - 1, INT64_MAX}));
  EXPECT_EQ(gather->values, (std::vector<nlohmann::json>{int64_t(1) << 62}));
}

// nlohmann/json throws out_of_range, not parse_error, for a number beyond double.
TEST(SpaceFuzzRegressions, NumberBeyondDoubleIsInvalidJson) {
  const std::string file =
      std::string(HYBRID_SOURCE_DIR) + "/fuzz/regressions/tune_space/number_overflow.json";
  try {
    load_space(file);
    FAIL() << "loaded";
  } catch (const TuneError& e) {
    EXPECT_THAT(std::string(e.what()), testing::StartsWith("space: " + file + ": invalid JSON: "));
    EXPECT_THAT(std::string(e.what()), testing::HasSubstr("number overflow parsing '1e999'"));
  }
}

}  // namespace
}  // namespace hybrid::autotune
