// Inputs the checkpoint fuzzer found (fuzz/regressions/checkpoint/, the harness's
// format: meta.json, a separator, the partition bytes). Each must fail with a
// CheckpointError that names what is wrong, never a JSON library exception, an
// allocation sized by the file, or undefined behaviour.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine_test_util.h"
#include "fuzz/checkpoint_input.h"

namespace hybrid::engine {
namespace {

// Unpacks the regression input and reads it as Engine::load_checkpoint does;
// returns the CheckpointError's message ("" when it loaded).
std::string load_regression(const std::string& name) {
  const std::string file = std::string(HYBRID_SOURCE_DIR) + "/fuzz/regressions/checkpoint/" + name;
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

}  // namespace
}  // namespace hybrid::engine
