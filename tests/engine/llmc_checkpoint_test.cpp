// llm.c GPT-2 checkpoints: layout checked byte by byte against the format as
// llm.c defines it, exact fp32 round trips, bf16 rounding, and corrupt files.
#include "engine/model/gpt2/llmc_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/data/data_file_error.h"
#include "small_gpt2_weights.h"

namespace {

namespace fs = std::filesystem;
using namespace hybrid::engine;
using ::testing::HasSubstr;

class LlmcCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("hybrid_llmc_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string read_error(const std::string& p) {
    try {
      read_llmc_checkpoint(p);
    } catch (const DataFileError& e) {
      return e.what();
    }
    return "";
  }

  // A file with the given header ints and payload_bytes zero bytes after it.
  std::string raw(const std::string& name, std::vector<int32_t> head, size_t payload_bytes) {
    std::array<int32_t, 256> h{};
    for (size_t i = 0; i < head.size(); ++i) h[i] = head[i];
    const std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(h.data()), sizeof(h));
    std::vector<char> zeros(payload_bytes, 0);
    out.write(zeros.data(), std::streamsize(zeros.size()));
    return p;
  }

  fs::path dir_;
};

Gpt2Weights small_model(uint32_t seed) { return hybrid::test::small_gpt2_weights(seed); }

// The element counts of the format, written out from llm.c's table.
std::vector<size_t> spec_sizes(size_t maxT, size_t V_p, size_t L, size_t C) {
  return {V_p * C, maxT * C, L * C,         L * C,     L * 3 * C * C, L * 3 * C, L * C * C, L * C,
          L * C,   L * C,    L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C,     C,         C};
}

// Round to nearest even onto bf16, then back to float (independent of the engine's helper).
float bf16_round(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t lsb = (u >> 16) & 1u;
  u = (u + 0x7fffu + lsb) & 0xffff0000u;
  return std::bit_cast<float>(u);
}

TEST_F(LlmcCheckpoint, Fp32LayoutAndExactRoundTrip) {
  const Gpt2Weights w = small_model(1);
  const auto sizes = spec_sizes(16, 64, 2, 8);
  size_t total = 0;
  for (size_t s : sizes) total += s;
  ASSERT_EQ(w.num_parameters(), total);
  const std::string p = path("model.bin");
  write_llmc_checkpoint(p, w, 3);
  ASSERT_EQ(fs::file_size(p), 1024 + 4 * total);

  // Read the raw file and check header and each tensor at its spec offset.
  std::ifstream in(p, std::ios::binary);
  std::array<int32_t, 256> h{};
  in.read(reinterpret_cast<char*>(h.data()), sizeof(h));
  EXPECT_EQ(h[0], 20240326);
  EXPECT_EQ(h[1], 3);
  EXPECT_EQ(h[2], 16);  // max_seq_len
  EXPECT_EQ(h[3], 50);  // vocab_size
  EXPECT_EQ(h[4], 2);   // num_layers
  EXPECT_EQ(h[5], 2);   // num_heads
  EXPECT_EQ(h[6], 8);   // channels
  EXPECT_EQ(h[7], 64);  // padded_vocab_size
  std::vector<float> payload(total);
  in.read(reinterpret_cast<char*>(payload.data()), std::streamsize(total * 4));
  const auto tensors = w.tensors();
  size_t offset = 0;
  for (size_t t = 0; t < 16; ++t) {
    ASSERT_EQ(tensors[t]->size(), sizes[t]) << Gpt2Weights::tensor_names[t];
    ASSERT_EQ(0, std::memcmp(payload.data() + offset, tensors[t]->data(), sizes[t] * 4))
        << Gpt2Weights::tensor_names[t];
    offset += sizes[t];
  }

  const Gpt2Weights r = read_llmc_checkpoint(p);
  EXPECT_EQ(r.max_seq_len, 16);
  EXPECT_EQ(r.vocab_size, 50);
  EXPECT_EQ(r.padded_vocab_size, 64);
  EXPECT_EQ(r.num_layers, 2);
  EXPECT_EQ(r.num_heads, 2);
  EXPECT_EQ(r.channels, 8);
  for (size_t t = 0; t < 16; ++t)
    EXPECT_EQ(*r.tensors()[t], *tensors[t]) << Gpt2Weights::tensor_names[t];
  EXPECT_EQ(fs::directory_iterator(dir_)->path().filename(), "model.bin");  // no temp file left
}

TEST_F(LlmcCheckpoint, Bf16StoresRoundedValues) {
  Gpt2Weights w = small_model(2);
  w.lnfb[0] = 1.00390625f;  // halfway between bf16 1.0 and 1.0078125: rounds to even (1.0)
  w.lnfb[1] = 1.01171875f;  // halfway between 1.0078125 and 1.015625: rounds to even (1.015625)
  const std::string p = path("model_bf16.bin");
  write_llmc_checkpoint(p, w, 5);
  EXPECT_EQ(fs::file_size(p), 1024 + 2 * w.num_parameters());
  const Gpt2Weights r = read_llmc_checkpoint(p);
  const auto a = w.tensors();
  const auto b = r.tensors();
  for (size_t t = 0; t < 16; ++t)
    for (size_t i = 0; i < a[t]->size(); ++i)
      ASSERT_EQ((*b[t])[i], bf16_round((*a[t])[i]))
          << Gpt2Weights::tensor_names[t] << "[" << i << "]";
  EXPECT_EQ(r.lnfb[0], 1.0f);
  EXPECT_EQ(r.lnfb[1], 1.015625f);
  // bf16 keeps 8 significant bits: rounding's relative error is at most 2^-8.
  for (size_t i = 0; i < w.qkvw.size(); ++i)
    EXPECT_LE(std::fabs(r.qkvw[i] - w.qkvw[i]), std::ldexp(std::fabs(w.qkvw[i]), -8));
  // Written again as bf16, the already-rounded weights come back bit-identical.
  write_llmc_checkpoint(path("again.bin"), r, 5);
  EXPECT_EQ(read_llmc_checkpoint(path("again.bin")).qkvw, r.qkvw);
}

TEST_F(LlmcCheckpoint, CorruptFilesAreRejectedWithTheReason) {
  const Gpt2Weights w = small_model(3);
  const size_t fp32_bytes = 4 * w.num_parameters();
  const std::vector<int32_t> good = {20240326, 3, 16, 50, 2, 2, 8, 64};
  auto header = [&](size_t i, int32_t v) {
    auto h = good;
    h[i] = v;
    return h;
  };
  struct Case {
    std::string name;
    std::vector<int32_t> head;
    size_t payload;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"magic.bin", header(0, 20240520), fp32_bytes, "bad magic 20240520"},
      {"version.bin", header(1, 4), fp32_bytes,
       "unsupported checkpoint version 4 (supported: 3 = fp32, 5 = bf16)"},
      {"heads.bin", header(5, 3), fp32_bytes,
       "inconsistent header: channels 8 not divisible by num_heads 3"},
      {"vocab.bin", header(7, 40), fp32_bytes,
       "inconsistent header: padded_vocab_size 40 < vocab_size 50"},
      {"layers.bin", header(4, -1), fp32_bytes, "inconsistent header: non-positive dimension"},
      {"truncated.bin", good, fp32_bytes - 4,
       "truncated: the header (L=2 C=8 Vp=64 maxT=16 in fp32) needs"},
      {"trailing.bin", good, fp32_bytes + 2,
       "size mismatch: the header (L=2 C=8 Vp=64 maxT=16 in fp32)"},
      {"bf16_truncated.bin", header(1, 5), fp32_bytes / 2 - 1, "truncated"},
      // Huge dimensions must not wrap around or allocate: just too short.
      {"huge.bin", header(6, 1 << 30), 64, "truncated"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = raw(c.name, c.head, c.payload);
    const std::string msg = read_error(p);
    EXPECT_THAT(msg, HasSubstr(p + ": "));
    EXPECT_THAT(msg, HasSubstr(c.reason));
  }
  const std::string tiny = path("tiny.bin");
  std::ofstream(tiny, std::ios::binary) << "GPT2";
  EXPECT_THAT(read_error(tiny), HasSubstr(tiny + ": too small for an llm.c checkpoint (4 bytes"));
  EXPECT_THAT(
      read_error(path("absent.bin")),
      HasSubstr(path("absent.bin") + ": cannot open checkpoint: No such file or directory"));
  // The truncated file in full: a real checkpoint cut short.
  write_llmc_checkpoint(path("cut.bin"), w, 3);
  fs::resize_file(path("cut.bin"), 1024 + fp32_bytes / 2);
  EXPECT_THAT(read_error(path("cut.bin")), HasSubstr("truncated"));
}

TEST_F(LlmcCheckpoint, WriteRejectsBadInputAndLeavesNothing) {
  Gpt2Weights w = small_model(4);
  w.fcw.pop_back();
  EXPECT_THROW(write_llmc_checkpoint(path("bad_size.bin"), w, 3), std::invalid_argument);
  Gpt2Weights v = small_model(4);
  EXPECT_THROW(write_llmc_checkpoint(path("bad_version.bin"), v, 4), std::invalid_argument);
  v.num_heads = 3;  // 8 channels are not divisible by 3 heads
  EXPECT_THROW(write_llmc_checkpoint(path("bad_heads.bin"), v, 3), std::invalid_argument);
  EXPECT_TRUE(fs::is_empty(dir_));
  // An existing file is replaced whole, never half-written.
  write_llmc_checkpoint(path("m.bin"), small_model(5), 3);
  write_llmc_checkpoint(path("m.bin"), small_model(6), 5);
  EXPECT_EQ(read_llmc_checkpoint(path("m.bin")).wte[0], bf16_round(small_model(6).wte[0]));
}

}  // namespace
