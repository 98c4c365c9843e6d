// Inputs the fuzzers found in the engine's readers (fuzz/regressions/<harness>/).
// Each must fail with the reader's named error saying what is wrong, never a
// JSON library exception, an allocation sized by the file, or undefined behaviour.
// Checkpoint inputs are in the harness's format: meta.json, a separator line, the
// partition bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/config/config.h"
#include "engine_test_util.h"
#include "fuzz/checkpoint_input.h"

namespace hybrid::engine {
namespace {

// Unpacks the regression input and reads it as Engine::load_checkpoint does;
// returns the CheckpointError's message ("" when it loaded).
std::string regression_file(const std::string& harness, const std::string& name) {
  return std::string(HYBRID_SOURCE_DIR) + "/fuzz/regressions/" + harness + "/" + name;
}

std::string load_regression(const std::string& name) {
  const std::string file = regression_file("checkpoint", name);
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in) << file;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  test::TempDir dir;
  fuzz::unpack_checkpoint_input(bytes, dir.path());
  try {
    const std::string tag = resolve_checkpoint_tag(dir.path().string(), "");
    const auto meta = read_checkpoint_meta(dir.path().string(), tag);
    std::vector<float> master(64), state(128);
    read_checkpoint_range(dir.path().string(), tag, meta, FlatRange{0, 64}, 2, master.data(),
                          state.data());
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointFuzzRegressions, MetaWithoutStateFloatsNamesTheField) {
  EXPECT_THAT(load_regression("meta_without_state_floats.ckpt"),
              testing::HasSubstr("meta.json: state_floats is missing"));
}

TEST(CheckpointFuzzRegressions, FormatThatIsANumberIsNotAHybridCheckpoint) {
  EXPECT_THAT(load_regression("format_is_a_number.ckpt"),
              testing::HasSubstr("meta.json is not a hybrid checkpoint"));
}

// Engine::load_checkpoint reads loss_scaler.dynamic with json::value, which threw
// type_error for a string.
TEST(CheckpointFuzzRegressions, LossScalerFieldsAreChecked) {
  EXPECT_THAT(load_regression("loss_scaler_dynamic_is_a_string.ckpt"),
              testing::HasSubstr("meta.json: loss_scaler.dynamic must be true or false"));
}

// A partition whose header and meta.json agree on 2^40 parameters: the reader
// allocated the header's count (4 TiB of floats) before looking at the file's size.
TEST(CheckpointFuzzRegressions, PartitionSizeIsCheckedAgainstTheFileBeforeAllocating) {
  EXPECT_THAT(load_regression("partition_of_2^40_floats.ckpt"),
              testing::HasSubstr("partition_00000.bin is truncated (expected 13194139533376 "
                                 "bytes, found 320)"));
}

// nlohmann/json throws out_of_range, not parse_error, for a number beyond double:
// load_config caught only the latter.
TEST(ConfigFuzzRegressions, NumberBeyondDoubleIsInvalidJson) {
  const std::string file = regression_file("config", "number_overflow.json");
  try {
    load_config(file);
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config: " + file + ": invalid JSON: number overflow parsing '5e764'");
  }
}

}  // namespace
}  // namespace hybrid::engine
