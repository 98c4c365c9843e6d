// The program in examples/ builds, runs on the public API alone, learns (its loss
// falls) and saves a checkpoint the engine can find again.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/engine/engine_test_util.h"

namespace hybrid {
namespace {

std::vector<double> losses_in(const std::string& output) {
  static const std::regex line(R"(step (\d+) loss ([0-9.]+))");
  std::vector<double> losses;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
       it != std::sregex_iterator(); ++it)
    losses.push_back(std::stod((*it)[2].str()));
  return losses;
}

TEST(Example, TrainGpt2LearnsAndSavesACheckpoint) {
  const std::string example = std::string(HYBRID_BINARY_DIR) + "/examples/example_train_gpt2";
  ASSERT_TRUE(std::filesystem::exists(example))
      << example << " is a dependency of this test executable";
  test::TempDir dir;
  const auto r = test::run_command(example + " " + dir.path().string() + " 30");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const auto losses = losses_in(r.output);
  ASSERT_EQ(losses.size(), 30u) << r.output;
  // A 64-token vocabulary starts near ln 64 = 4.16; the toy language is learnt fast.
  EXPECT_NEAR(losses.front(), 4.16, 0.5) << r.output;
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "final" / "meta.json")) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "latest")) << r.output;
}

}  // namespace
}  // namespace hybrid
