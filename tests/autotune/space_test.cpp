// Search-space parsing: every value form, nesting and aliases, and errors that
// name the key at fault.
#include "autotune/space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/tune_error.h"
#include "tests/common/error_of.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::vector<json> values_of(const SearchSpace& s, const std::string& name) {
  const Axis* a = s.find(name);
  return a ? a->values : std::vector<json>{};
}

std::string error_of(const json& j) {
  return hybrid::test::error_of<TuneError>([&] { parse_space(j); });
}

TEST(Space, ListsRangesAndPowersOfTwo) {
  const SearchSpace s = parse_space(json::parse(R"({
    "train_micro_batch_size_per_gpu": {"pow2": [3, 40]},
    "gradient_accumulation_steps": {"range": [1, 7, 3]},
    "zero_optimization.stage": {"range": [0, 3]},
    "zero_optimization.overlap_comm": [true, false, true],
    "zero_optimization.reduce_bucket_size": 5e8
  })"));
  EXPECT_EQ(values_of(s, "train_micro_batch_size_per_gpu"), (std::vector<json>{4, 8, 16, 32}));
  EXPECT_EQ(values_of(s, "gradient_accumulation_steps"), (std::vector<json>{1, 4, 7}));
  EXPECT_EQ(values_of(s, "zero_optimization.stage"), (std::vector<json>{0, 1, 2, 3}));
  EXPECT_EQ(values_of(s, "zero_optimization.overlap_comm"),
            (std::vector<json>{true, false}));  // deduplicated
  EXPECT_EQ(values_of(s, "zero_optimization.reduce_bucket_size"), (std::vector<json>{500000000}));
  EXPECT_EQ(s.grid_size(), 4u * 3u * 4u * 2u * 1u);
  // Axes come in table order whatever the file's order.
  ASSERT_EQ(s.axes.size(), 5u);
  EXPECT_EQ(s.axes[0].def->short_name, "mbs");
  EXPECT_EQ(s.axes[2].def->short_name, "stage");
}

TEST(Space, NestedKeysShortNamesAndAliasesMeanTheSameAxis) {
  const SearchSpace nested = parse_space(json::parse(R"({
    "zero_optimization": {"stage": [1, 3], "stage3_prefetch_bucket_size": {"values": [1000, 2000]},
                          "offload_optimizer": {"device": ["none", "cpu"]}}
  })"));
  EXPECT_EQ(values_of(nested, "zero_optimization.stage"), (std::vector<json>{1, 3}));
  EXPECT_EQ(values_of(nested, "zero_optimization.stage3_prefetch_bucket_size"),
            (std::vector<json>{1000, 2000}));
  EXPECT_EQ(values_of(nested, "zero_optimization.offload_optimizer.device"),
            (std::vector<json>{"none", "cpu"}));
  const SearchSpace short_names =
      parse_space(json::parse(R"({"mbs": [2], "stage": [1, 3], "prefetch": [1000, 2000]})"));
  EXPECT_EQ(values_of(short_names, "zero_optimization.stage"), (std::vector<json>{1, 3}));
  EXPECT_EQ(values_of(short_names, "train_micro_batch_size_per_gpu"), (std::vector<json>{2}));
  EXPECT_EQ(find_axis("zero_optimization.prefetch_bucket_size"), find_axis("prefetch"));
  EXPECT_EQ(find_axis("nonsense"), nullptr);
}

TEST(Space, ContiguousGradientsIsNotAnAxisBecauseItChangesNothing) {
  // Every spelling the axis had is refused with the reason, not as a typo.
  for (const char* space : {R"({"contig": [true, false]})",
                            R"({"zero_optimization.contiguous_gradients": [true, false]})",
                            R"({"zero_optimization": {"contiguous_gradients": [false]}})",
                            R"({"contiguous_gradients": [true]})"}) {
    const std::string msg = error_of(json::parse(space));
    EXPECT_THAT(msg, HasSubstr("is not an axis: zero_optimization.contiguous_gradients has no "
                               "effect"))
        << space;
  }
  EXPECT_EQ(find_axis("contig"), nullptr);
  for (const auto& axis : axis_table())
    EXPECT_EQ(axis.name.find("contiguous"), std::string::npos) << axis.name;
}

TEST(Space, ErrorsNameTheKey) {
  EXPECT_THAT(error_of(json::parse(R"({"zero_optimization.stage": [0, 5]})")),
              HasSubstr("zero_optimization.stage must be an integer in 0..3, got 5"));
  EXPECT_THAT(error_of(json::parse(R"({"micro": [1]})")), HasSubstr("unknown key 'micro'"));
  EXPECT_THAT(error_of(json::parse(R"({"zero_optimization": {"stag": [1]}})")),
              HasSubstr("unknown key 'zero_optimization.stag'"));
  EXPECT_THAT(error_of(json::parse(R"({"train_micro_batch_size_per_gpu": []})")),
              HasSubstr("train_micro_batch_size_per_gpu must be a non-empty list"));
  EXPECT_THAT(error_of(json::parse(R"({"train_micro_batch_size_per_gpu": {"range": [8, 2]}})")),
              HasSubstr("train_micro_batch_size_per_gpu.range must be [lo, hi] or [lo, hi, step]"));
  EXPECT_THAT(error_of(json::parse(R"({"train_micro_batch_size_per_gpu": {"pow2": [5, 7]}})")),
              HasSubstr("train_micro_batch_size_per_gpu.pow2 = [5,7] contains no power of two"));
  EXPECT_THAT(error_of(json::parse(R"({"train_micro_batch_size_per_gpu": [1.5]})")),
              HasSubstr("train_micro_batch_size_per_gpu must be a positive integer, got 1.5"));
  EXPECT_THAT(error_of(json::parse(R"({"train_micro_batch_size_per_gpu": [0]})")),
              HasSubstr("must be a positive integer, got 0"));
  EXPECT_THAT(error_of(json::parse(R"({"zero_optimization.overlap_comm": ["yes"]})")),
              HasSubstr("zero_optimization.overlap_comm must be true or false, got \"yes\""));
  EXPECT_THAT(error_of(json::parse(R"({"offload_optimizer": ["gpu"]})")),
              HasSubstr("offload_optimizer must be one of none, cpu, got \"gpu\""));
  EXPECT_THAT(error_of(json::parse(R"({"zero_optimization.overlap_comm": {"range": [0, 1]}})")),
              HasSubstr("ranges are for integer keys"));
  EXPECT_THAT(
      error_of(json::parse(R"({"gradient_accumulation_steps": [1], "train_batch_size": 8})")),
      HasSubstr("give gradient_accumulation_steps or train_batch_size"));
  EXPECT_THAT(error_of(json::parse(R"({"stage": [1], "zero_optimization.stage": [2]})")),
              HasSubstr("given twice"));
  EXPECT_THAT(error_of(json::parse(R"({"mbs": {"range": [1, 100000]}})")),
              HasSubstr("more than 4096 values"));
  EXPECT_THAT(error_of(json::object()), HasSubstr("no keys to tune"));
  EXPECT_THAT(error_of(json::array()), HasSubstr("the top level must be a JSON object"));
}

TEST(Space, FilesReportTheirPath) {
  test::TempDir dir;
  std::ofstream(dir / "bad.json") << "{\"stage\": [1,}";
  try {
    load_space(dir / "bad.json");
    FAIL() << "expected an error";
  } catch (const TuneError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir / "bad.json"));
    EXPECT_THAT(e.what(), HasSubstr("invalid JSON"));
  }
  std::ofstream(dir / "range.json") << "// comments are fine\n{\"stage\": [4]}";
  try {
    load_space(dir / "range.json");
    FAIL() << "expected an error";
  } catch (const TuneError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir / "range.json"));
    EXPECT_THAT(e.what(), HasSubstr("stage must be an integer in 0..3, got 4"));
  }
  EXPECT_THROW(load_space(dir / "missing.json"), TuneError);
}

// Issue 32: {"mbs": [1, 2], "mbs": [4]} tuned mbs=4 only; a key twice in one
// object is refused as the config reader refuses it, naming the key's path.
TEST(Space, FilesRefuseADuplicateKeyNamingIt) {
  test::TempDir dir;
  std::ofstream(dir / "twice.json") << R"({"mbs": [1, 2], "mbs": [4]})";
  try {
    load_space(dir / "twice.json");
    FAIL() << "expected an error";
  } catch (const TuneError& e) {
    EXPECT_EQ(std::string(e.what()), "space: " + dir / "twice.json" + ": duplicate key mbs");
  }
  std::ofstream(dir / "nested.json")
      << R"({"zero_optimization": {"stage": [1], "stage": [2]}, "mbs": [1]})";
  try {
    load_space(dir / "nested.json");
    FAIL() << "expected an error";
  } catch (const TuneError& e) {
    EXPECT_THAT(e.what(), HasSubstr(": duplicate key zero_optimization.stage"));
  }
}

TEST(Space, DefaultSpaceFollowsTheAutotuningBlock) {
  AutotuningOptions o;
  o.min_train_micro_batch_size_per_gpu = 2;
  o.max_train_micro_batch_size_per_gpu = 20;
  o.num_tuning_micro_batch_sizes = 2;
  const SearchSpace s = default_space(o);
  EXPECT_EQ(values_of(s, "train_micro_batch_size_per_gpu"), (std::vector<json>{2, 4, 8, 16}));
  EXPECT_EQ(values_of(s, "zero_optimization.stage"), (std::vector<json>{0, 1, 2, 3}));
  EXPECT_EQ(s.thin_micro_batch_sizes, 2);
  // to_json round-trips through the parser (the stored space is a valid space file).
  json j = s.to_json();
  j.erase("num_tuning_micro_batch_sizes");
  EXPECT_EQ(parse_space(j).to_json(), j);
}

}  // namespace
}  // namespace hybrid::autotune
