// HYBRID_BENCH_SLOWDOWN parsing and name matching (the benchmark-side switch that
// proves the regression check works).
#include "bench/compare/slowdown_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hybrid::bench {
namespace {

using ::testing::HasSubstr;

TEST(SlowdownSpec, SingleRuleMatchesBySearch) {
  auto rules = parse_slowdown_spec("matmul=0.30");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "matmul/768/3072"), 0.30);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "BM_matmul"), 0.30);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "layernorm/768"), 0.0);
}

TEST(SlowdownSpec, SeveralRulesFirstMatchWins) {
  auto rules =
      parse_slowdown_spec("^canary/softmax$=30%; layernorm=0.1 ;matmul/768=0.5;matmul=0.2");
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "canary/softmax"), 0.30);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "canary/softmax_big"), 0.0);  // anchored
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "layernorm/1024"), 0.1);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "matmul/768/3072"), 0.5);
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "matmul/1024"), 0.2);
}

TEST(SlowdownSpec, RegexMayContainEquals) {
  auto rules = parse_slowdown_spec("a=b=0.25");  // split at the last '='
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].pattern, "a=b");
  EXPECT_DOUBLE_EQ(slowdown_fraction(rules, "xa=by"), 0.25);
}

TEST(SlowdownSpec, EmptySpecMeansNoSlowdown) {
  EXPECT_TRUE(parse_slowdown_spec("").empty());
  EXPECT_TRUE(parse_slowdown_spec(" ; ").empty());
  EXPECT_DOUBLE_EQ(slowdown_fraction({}, "anything"), 0.0);
}

TEST(SlowdownSpec, MalformedRulesNameTheVariableAndRule) {
  auto error = [](const char* spec) {
    try {
      parse_slowdown_spec(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error("matmul"), HasSubstr("HYBRID_BENCH_SLOWDOWN: rule 'matmul' has no '='"));
  EXPECT_THAT(error("matmul=fast"), HasSubstr("has no number"));
  EXPECT_THAT(error("=0.3"), HasSubstr("empty name regex"));
  EXPECT_THAT(error("matmul=-0.3"), HasSubstr("outside [0, 10]"));
  EXPECT_THAT(error("matmul=0.3;(unclosed=0.2"),
              HasSubstr("rule '(unclosed=0.2' has an invalid regex"));
}

}  // namespace
}  // namespace hybrid::bench
