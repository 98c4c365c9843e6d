// The command-line checks every tool shares (issue 32): numbers out of range in
// our words, and every parse error ending with the tool's documented status
// instead of CLI11's own codes (105 for a range, 106 for a missing option).
#include "base/cli_checks.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace hybrid::base {
namespace {

struct Parsed {
  std::optional<int> status;
  int64_t steps = 5;
  double timeout = 1;
  int vocab = 2;
};

// What the last parse printed on stderr.
std::string& last_stderr() {
  static std::string text;
  return text;
}

Parsed parse(std::vector<const char*> args) {
  Parsed p;
  CLI::App app{"test"};
  app.add_option("--steps", p.steps)->check(at_least(1));
  app.add_option("--timeout", p.timeout)->check(greater_than(0));
  app.add_option("--vocab", p.vocab)->check(between(2, 65536));
  args.insert(args.begin(), "tool");
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  p.status = parse_command_line(app, int(args.size()), args.data(), 7);
  testing::internal::GetCapturedStdout();
  last_stderr() = testing::internal::GetCapturedStderr();
  return p;
}

TEST(CliChecks, ValuesInRangeParse) {
  const Parsed p = parse({"--steps", "1", "--timeout", "0.5", "--vocab", "65536"});
  EXPECT_EQ(p.status, std::nullopt);
  EXPECT_EQ(p.steps, 1);
  EXPECT_EQ(p.timeout, 0.5);
  EXPECT_EQ(p.vocab, 65536);
}

TEST(CliChecks, OutOfRangeValuesAreRefusedInOurWordsWithTheToolsStatus) {
  EXPECT_EQ(parse({"--steps", "0"}).status, 7);
  EXPECT_NE(last_stderr().find("--steps: must be at least 1, got 0"), std::string::npos)
      << last_stderr();
  EXPECT_EQ(parse({"--timeout", "0"}).status, 7);
  EXPECT_NE(last_stderr().find("--timeout: must be greater than 0, got 0"), std::string::npos)
      << last_stderr();
  EXPECT_EQ(parse({"--vocab", "1"}).status, 7);
  EXPECT_NE(last_stderr().find("--vocab: must be between 2 and 65536, got 1"), std::string::npos)
      << last_stderr();
  EXPECT_EQ(last_stderr().find("not in range"), std::string::npos) << last_stderr();
}

TEST(CliChecks, OtherMistakesEndWithTheToolsStatusAndHelpWithZero) {
  EXPECT_EQ(parse({"--steps", "many"}).status, 7);  // CLI11's conversion names the value
  EXPECT_NE(last_stderr().find("many"), std::string::npos) << last_stderr();
  EXPECT_EQ(parse({"--nonsense"}).status, 7);
  EXPECT_EQ(parse({"--help"}).status, 0);
}

}  // namespace
}  // namespace hybrid::base
