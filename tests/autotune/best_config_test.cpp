// The best config file: complete, without the autotuning block, a consistent
// batch triad, accepted by parse_config as hybrid-train would read it.
#include "autotune/best_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/config/config.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;

TEST(BestConfig, RoundTripsThroughTheEnginesParser) {
  test::TempDir dir;
  json trial =
      test::tiny_config({{"train_micro_batch_size_per_gpu", 4},
                         {"gradient_accumulation_steps", 3},
                         {"zero_optimization", {{"stage", 2}, {"reduce_bucket_size", 1000}}},
                         {"autotuning", {{"enabled", true}}}});
  trial.erase("train_batch_size");
  const std::string path = dir / "out/best.json";
  write_best_config(path, trial, 2);
  const json written = test::read_json(path);
  EXPECT_FALSE(written.contains("autotuning"));
  EXPECT_EQ(written["train_batch_size"], 4 * 3 * 2);
  EXPECT_EQ(written["train_micro_batch_size_per_gpu"], 4);
  EXPECT_EQ(written["gradient_accumulation_steps"], 3);
  const engine::Config c = engine::load_config(path, 2);
  EXPECT_EQ(c.zero.stage, 2);
  EXPECT_EQ(c.zero.reduce_bucket_size, 1000);
  EXPECT_EQ(c.train_batch_size, 24);
  EXPECT_TRUE(c.ignored_keys.empty());  // nothing the engine would warn about
  // Everything else is the trial's config.
  json expected = trial;
  expected.erase("autotuning");
  expected["train_batch_size"] = 24;
  EXPECT_EQ(written, expected);
  // Atomic: no temporary file left beside it.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "out"))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(BestConfig, AnInvalidConfigIsRefusedAndNothingIsWritten) {
  test::TempDir dir;
  json bad = test::tiny_config({{"zero_optimization", {{"stage", 7}}}});
  EXPECT_THROW(write_best_config(dir / "best.json", bad, 1), engine::ConfigError);
  EXPECT_FALSE(std::filesystem::exists(dir / "best.json"));
}

}  // namespace
}  // namespace hybrid::autotune
