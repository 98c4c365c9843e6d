// Safetensors files and directories: what we write reads back (F32 bitwise,
// F16 and BF16 as round-to-nearest-even of the values), the layout is the
// format's (read here byte by byte, independently of the reader), a file
// written by Hugging Face's `safetensors` 0.8.0 reads with the values it was
// given, sharded directories resolve through their index, and every bad input
// is refused with an error naming the file and what is wrong.
#include "engine/data/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/data/data_file_error.h"
#include "engine_test_util.h"
#include "kernels/dtype.h"
#include "tests/common/error_of.h"

namespace hybrid::engine {
namespace {

namespace fs = std::filesystem;

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (float(i) - float(n) / 3.0f) + 1e-3f * float(i);
  return v;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A file from a header given as JSON text and `data` bytes.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return out + header + data;
}

// The error `fn` throws, or "" when it throws none.
template <class Fn>
std::string error_of(Fn fn) {
  return hybrid::test::error_of<DataFileError>(fn);
}

TEST(Safetensors, WrittenTensorsReadBackInEachDtype) {
  test::TempDir dir;
  const auto a = ramp(6 * 5, 0.37f), b = ramp(7, -2.5f);
  const std::vector<StTensorOut> tensors = {{"w.a", {6, 5}, a}, {"w.b", {7}, b}};
  for (StDType dt : {StDType::F32, StDType::F16, StDType::BF16}) {
    SCOPED_TRACE(std::string(st_dtype_name(dt)));
    const std::string path = dir / "t.safetensors";
    write_safetensors(path, tensors, dt, {{"format", "pt"}});
    SafetensorsFile f(path);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    ASSERT_EQ(f.tensors().size(), 2u);
    const StTensor* ta = f.find("w.a");
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ta->shape, (std::vector<int64_t>{6, 5}));
    EXPECT_EQ(ta->dtype, dt);
    for (const auto& [name, src] : {std::pair{"w.a", &a}, std::pair{"w.b", &b}}) {
      const auto got = f.read_f32(*f.find(name));
      ASSERT_EQ(got.size(), src->size());
      for (size_t i = 0; i < got.size(); ++i) {
        const float x = (*src)[i];
        const float want = dt == StDType::F32 ? x
                           : dt == StDType::BF16
                               ? kernels::bf16_to_float(kernels::float_to_bf16(x))
                               : kernels::f16_to_float_slow(kernels::float_to_f16_slow(x));
        EXPECT_EQ(got[i], want) << name << "[" << i << "]";
      }
    }
  }
}

// The bytes as the format defines them, read without our reader.
TEST(Safetensors, LayoutIsTheFormats) {
  test::TempDir dir;
  const std::vector<float> a = {1.5f, -2.0f, 0.25f}, b = {3.0f};
  write_safetensors(dir / "t.safetensors", {{"a", {3}, a}, {"b", {1, 1}, b}}, StDType::F32,
                    {{"format", "pt"}});
  const std::string bytes = slurp(dir / "t.safetensors");
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  EXPECT_EQ(n % 8, 0u) << "the data starts 8-byte aligned";
  ASSERT_EQ(bytes.size(), 8 + n + 4 * 4);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json({3}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(header["b"]["shape"], nlohmann::json({1, 1}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json({12, 16}));
  float back[4];
  std::memcpy(back, bytes.data() + 8 + n, 16);  // little-endian on x86
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.0f);
  EXPECT_EQ(back[2], 0.25f);
  EXPECT_EQ(back[3], 3.0f);
}

// tests/engine/data/hf_safetensors_0.8.0.safetensors was written by Hugging
// Face's safetensors 0.8.0 (safetensors.torch.save_file, torch 1.13) from
//   f32 = arange(12).reshape(3, 4) * 0.5 - 2, f16 = arange(5) * 0.25,
//   bf16 = arange(6).reshape(2, 3) * -1.5.
TEST(Safetensors, ReadsAFileWrittenByHuggingFace) {
  const std::string path =
      std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/hf_safetensors_0.8.0.safetensors";
  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const auto f32 = f.read_f32(*f.find("f32"));
  ASSERT_EQ(f.find("f32")->shape, (std::vector<int64_t>{3, 4}));
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(f32[i], float(i) * 0.5f - 2.0f);
  ASSERT_EQ(f.find("f16")->dtype, StDType::F16);
  const auto f16 = f.read_f32(*f.find("f16"));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(f16[i], float(i) * 0.25f);
  ASSERT_EQ(f.find("bf16")->dtype, StDType::BF16);
  ASSERT_EQ(f.find("bf16")->shape, (std::vector<int64_t>{2, 3}));
  const auto bf16 = f.read_f32(*f.find("bf16"));
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(bf16[i], float(i) * -1.5f);
}

TEST(Safetensors, ShardedDirectoriesResolveThroughTheirIndex) {
  test::TempDir dir;
  const auto a = ramp(100, 0.1f), b = ramp(60, 0.2f), c = ramp(90, 0.3f);
  const std::vector<StTensorOut> tensors = {{"a", {10, 10}, a}, {"b", {60}, b}, {"c", {9, 10}, c}};
  const std::string out = dir / "sharded";
  write_safetensors_dir(out, tensors, StDType::F32, /*max_shard_bytes=*/500);
  EXPECT_FALSE(fs::exists(fs::path(out) / "model.safetensors"));
  const auto index = nlohmann::json::parse(slurp(out + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], (100 + 60 + 90) * 4);
  EXPECT_EQ(index["weight_map"]["a"], "model-00001-of-00003.safetensors");
  EXPECT_EQ(index["weight_map"]["c"], "model-00003-of-00003.safetensors");
  SafetensorsSet set(out);
  EXPECT_EQ(set.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(set.read_f32("b", {60}), b);
  EXPECT_EQ(set.read_f32("c", {9, 10}), c);

  // Written again below the limit: one file, and the old index no longer wins.
  write_safetensors_dir(out, tensors, StDType::F32);
  EXPECT_FALSE(fs::exists(fs::path(out) / "model.safetensors.index.json"));
  EXPECT_EQ(SafetensorsSet(out).read_f32("a", {10, 10}), a);
}

TEST(Safetensors, BadFilesAreRefusedNamingWhatIsWrong) {
  test::TempDir dir;
  const std::string p = dir / "bad.safetensors";
  auto refused = [&](const std::string& bytes) {
    spit(p, bytes);
    return error_of([&] { SafetensorsFile f(p); });
  };
  const std::string ok_header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(refused(file_of(ok_header, std::string(8, '\0'))), "");

  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  std::string past(8, '\0');
  past[1] = 0x03;  // 768 bytes of header in a file of 10
  std::string over_limit(8, '\0');
  over_limit[3] = 0x10;  // 268 MB
  const std::vector<Case> cases = {
      {"empty", "", "too short"},
      {"truncated data", file_of(ok_header, std::string(5, '\0')), "run past the 5 bytes of data"},
      {"header length past the file", past + "{}", "runs past the end of the file"},
      {"header over 100 MB", over_limit + std::string(16, ' '), "over the 100000000 bytes"},
      {"not JSON", file_of("{\"w\":", ""), "not JSON"},
      {"not an object", file_of("[1,2]", ""), "not a JSON object"},
      {"unknown dtype",
       file_of(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})",
               std::string(16, '\0')),
       "unknown dtype 'F128'"},
      {"shape and span disagree",
       file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
       "shape [3] of F32 is 12 bytes, its data_offsets span 8"},
      {"negative dimension",
       file_of(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')),
       "not a non-negative integer"},
      {"offsets backwards",
       file_of(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", std::string(8, '\0')),
       "end before they begin"},
      {"overlap",
       file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               std::string(12, '\0')),
       "tensors 'a' and 'b' overlap"},
      {"missing field", file_of(R"({"w":{"dtype":"F32","shape":[2]}})", std::string(8, '\0')),
       "needs dtype, shape and data_offsets"},
      {"metadata not strings", file_of(R"({"__metadata__":{"format":1}})", ""),
       "__metadata__ 'format' is not a string"},
  };
  for (const auto& c : cases) {
    const std::string e = refused(c.bytes);
    EXPECT_NE(e.find(p), std::string::npos) << c.what << ": " << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << c.what << ": " << e;
  }
  spit(p,
       file_of(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')));
  SafetensorsFile ints(p);
  EXPECT_NE(error_of([&] { ints.read_f32(*ints.find("w")); }).find("only F32, F16 and BF16"),
            std::string::npos);
}

TEST(Safetensors, DirectoriesRefuseMissingTensorsShapesAndShards) {
  test::TempDir dir;
  const auto a = ramp(6, 1.0f);
  const std::string d = dir / "m";
  write_safetensors_dir(d, {{"a", {2, 3}, a}}, StDType::BF16);
  SafetensorsSet set(d);
  EXPECT_NE(error_of([&] { set.read_f32("b", {2, 3}); }).find("no tensor 'b'"), std::string::npos);
  const std::string shape = error_of([&] { set.read_f32("a", {3, 2}); });
  EXPECT_NE(shape.find("tensor 'a' has shape [2, 3], the model needs [3, 2]"), std::string::npos)
      << shape;
  EXPECT_NE(error_of([&] { SafetensorsSet(dir / "nowhere"); }).find("holds neither"),
            std::string::npos);
  spit(d + "/model.safetensors.index.json",
       R"({"weight_map": {"a": "model-00001-of-00002.safetensors"}})");
  EXPECT_NE(error_of([&] { SafetensorsSet s(d); }).find("which " + d + " does not hold"),
            std::string::npos);
  spit(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "../m/model.safetensors"}})");
  EXPECT_NE(error_of([&] { SafetensorsSet s(d); }).find("not a file in this directory"),
            std::string::npos);
}

}  // namespace
}  // namespace hybrid::engine
