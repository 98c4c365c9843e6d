// Packed documents on the CUDA backend against the CPU backend (the oracle,
// checked against naive references in attention_packed_test.cpp,
// encoder_positions_test.cpp and cross_entropy_ignored_test.cpp), in fp32, fp16
// and bf16 on the same dt-rounded inputs: attention with positions (MHA and
// grouped key/value heads), the encoder and its shard variants with positions,
// cross-entropy and its shard ops with ignored (negative) targets. Skips (with
// the reason) without a usable CUDA device.
//
// Tolerances as cuda_ops_gpu_test.cpp (cuda_pair.h): per dtype, chained
// attention 2× (forward) and 4× (backward); fp32 statistics 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "cuda_pair.h"
#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Pair;
using test::random_floats;
using test::random_ints;
using test::RawPair;
using test::rel_err;

class CudaPacked : public test::CudaOps {};

// Each token's position in its document, documents of these lengths end to end.
std::vector<int32_t> gpu_positions_of(const std::vector<std::vector<int>>& rows) {
  std::vector<int32_t> pos;
  for (const auto& lengths : rows)
    for (int len : lengths)
      for (int i = 0; i < len; ++i) pos.push_back(i);
  return pos;
}

// T = 200: row 0 starts documents inside and on 64-wide tiles, with
// single-token ones; row 1 crosses every tile boundary.
const std::vector<std::vector<int>> kGpuPackings = {{1, 40, 23, 1, 1, 62, 2, 70},
                                                    {50, 1, 60, 45, 44}};

TEST_P(CudaPacked, AttentionWithPositionsMatchesTheCpu) {
  const int B = 2, T = 200, C = 48, NH = 4, hs = C / NH;
  RawPair<int32_t> pos(*cpu_, *gpu_, gpu_positions_of(kGpuPackings));
  std::vector<int32_t> index;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) index.push_back(t);
  RawPair<int32_t> whole_rows(*cpu_, *gpu_, index);
  for (const int NKV : {4, 2, 1}) {
    const size_t row = size_t(C) + 2 * size_t(NKV) * hs;
    auto qkv = pair_rand(size_t(B) * T * row, 601, -2.0f, 2.0f);
    auto out = pair(std::vector<float>(size_t(B) * T * C));
    const size_t cs = cpu_->attention_saved_bytes(dt(), B, T, C, NH);
    const size_t gs = gpu_->attention_saved_bytes(dt(), B, T, C, NH);
    void* csaved = cpu_->allocate(cs);
    void* gsaved = gpu_->allocate(gs);
    cpu_->attention_forward(dt(), out.c(), csaved, qkv.c(), pos.c(), B, T, C, NH, NKV);
    gpu_->attention_forward(dt(), out.g(), gsaved, qkv.g(), pos.g(), B, T, C, NH, NKV);
    EXPECT_LT(out.err(), 2 * tol()) << "NKV " << NKV;
    auto dout = pair_rand(size_t(B) * T * C, 602);
    auto dqkv = pair_rand(size_t(B) * T * row, 603);  // backward adds (+=)
    cpu_->attention_backward(dt(), dqkv.c(), dout.c(), qkv.c(), out.c(), csaved, pos.c(), B, T, C,
                             NH, NKV);
    gpu_->attention_backward(dt(), dqkv.g(), dout.g(), qkv.g(), out.g(), gsaved, pos.g(), B, T, C,
                             NH, NKV);
    EXPECT_LT(dqkv.err(), 4 * tol()) << "NKV " << NKV;
    // One document per row (positions[t] = t) is positions == null, bit for bit.
    auto out_index = pair(std::vector<float>(size_t(B) * T * C));
    auto out_null = pair(std::vector<float>(size_t(B) * T * C));
    gpu_->attention_forward(dt(), out_index.g(), gsaved, qkv.g(), whole_rows.g(), B, T, C, NH, NKV);
    gpu_->attention_forward(dt(), out_null.g(), gsaved, qkv.g(), nullptr, B, T, C, NH, NKV);
    EXPECT_EQ(out_index.gpu_values(), out_null.gpu_values()) << "NKV " << NKV;
    cpu_->deallocate(csaved, cs);
    gpu_->deallocate(gsaved, gs);
  }
}

// Row 0 packed documents, row 1 generation-like offsets t + 20, row 2 position 0
// everywhere (repeated positions: the sorted scatter's runs).
std::vector<int32_t> encoder_positions(int T) {
  std::vector<int32_t> pos = gpu_positions_of({{1, 10, T - 11}});
  for (int t = 0; t < T; ++t) pos.push_back(t + 20);
  for (int t = 0; t < T; ++t) pos.push_back(0);
  return pos;
}

TEST_P(CudaPacked, EncoderWithPositionsMatchesTheCpuAndIsDeterministic) {
  const int B = 3, T = 40, C = 136, V = 23, P = 64;
  RawPair<int32_t> tok(*cpu_, *gpu_, random_ints(size_t(B) * T, V, 611));
  RawPair<int32_t> pos(*cpu_, *gpu_, encoder_positions(T));
  auto wte = pair_rand(size_t(V) * C, 612);
  auto wpe = pair_rand(size_t(P) * C, 613);
  auto out = pair(std::vector<float>(size_t(B) * T * C));
  cpu_->encoder_forward(dt(), out.c(), tok.c(), pos.c(), wte.c(), wpe.c(), B, T, C);
  gpu_->encoder_forward(dt(), out.g(), tok.g(), pos.g(), wte.g(), wpe.g(), B, T, C);
  EXPECT_LT(out.err(), tol());
  auto dout = pair_rand(size_t(B) * T * C, 614);
  auto dwte = pair_rand(size_t(V) * C, 615);
  auto dwpe = pair_rand(size_t(P) * C, 616);
  cpu_->encoder_backward(dt(), dwte.c(), dwpe.c(), dout.c(), tok.c(), pos.c(), B, T, C);
  gpu_->encoder_backward(dt(), dwte.g(), dwpe.g(), dout.g(), tok.g(), pos.g(), B, T, C);
  EXPECT_LT(dwte.err(), tol());
  EXPECT_LT(dwpe.err(), tol());
  auto dwpe2 = pair_rand(size_t(P) * C, 616);
  gpu_->encoder_backward(dt(), nullptr, dwpe2.g(), dout.g(), tok.g(), pos.g(), B, T, C);
  EXPECT_EQ(dwpe2.gpu_values(), dwpe.gpu_values()) << "same inputs, same bits";
}

TEST_P(CudaPacked, EncoderShardsWithPositionsMatchTheCpu) {
  const int B = 3, T = 40, C = 136, Vp = 64, V = 50, P = 64;
  RawPair<int32_t> tok(*cpu_, *gpu_, random_ints(size_t(B) * T, V, 621));
  RawPair<int32_t> pos(*cpu_, *gpu_, encoder_positions(T));
  for (int shards : {2, 4}) {
    const int rows = Vp / shards;
    auto wte = pair_rand(size_t(Vp) * C, 622);
    auto wpe = pair_rand(size_t(P) * C, 623);
    auto dout = pair_rand(size_t(B) * T * C, 624);
    auto dwte = pair_rand(size_t(Vp) * C, 625);  // each shard accumulates into its rows
    auto dwpe = pair_rand(size_t(P) * C, 626);
    for (int s = 0; s < shards; ++s) {
      const size_t first = size_t(s) * rows * C * dtype_size(dt());
      auto at = [&](void* p) { return static_cast<char*>(p) + first; };
      auto out = pair(std::vector<float>(size_t(B) * T * C, 5.0f));
      cpu_->encoder_shard_forward(dt(), out.c(), tok.c(), pos.c(), at(wte.c()),
                                  s == 0 ? wpe.c() : nullptr, B, T, C, s * rows, rows);
      gpu_->encoder_shard_forward(dt(), out.g(), tok.g(), pos.g(), at(wte.g()),
                                  s == 0 ? wpe.g() : nullptr, B, T, C, s * rows, rows);
      EXPECT_LT(out.err(), tol()) << shards << " shards, shard " << s;
      cpu_->encoder_shard_backward(dt(), at(dwte.c()), s == 0 ? dwpe.c() : nullptr, dout.c(),
                                   tok.c(), pos.c(), B, T, C, s * rows, rows);
      gpu_->encoder_shard_backward(dt(), at(dwte.g()), s == 0 ? dwpe.g() : nullptr, dout.g(),
                                   tok.g(), pos.g(), B, T, C, s * rows, rows);
    }
    EXPECT_LT(dwte.err(), tol()) << shards << " shards";
    EXPECT_LT(dwpe.err(), tol()) << shards << " shards";
  }
}

constexpr int kCeRows = 37;

// Targets below V with rows 0, 5, 17 and 36 ignored (-1, -100, -1, INT32_MIN).
std::vector<int32_t> ignoring_targets(int V, uint32_t seed) {
  auto t = random_ints(kCeRows, V, seed);
  t[0] = -1;
  t[5] = -100;
  t[17] = -1;
  t[36] = std::numeric_limits<int32_t>::min();
  return t;
}

// Ignored rows exactly 0 on the GPU (width columns each), the rest near the CPU's.
void expect_ignored_rows_zero(const std::vector<float>& g, const std::vector<int32_t>& targets,
                              int width, const std::string& at) {
  for (int i = 0; i < kCeRows; ++i)
    for (int j = 0; targets[size_t(i)] < 0 && j < width; ++j)
      ASSERT_EQ(g[size_t(i) * width + j], 0.0f) << at << ": ignored row " << i << ", column " << j;
}

TEST_P(CudaPacked, CrossEntropyIgnoresNegativeTargets) {
  const int V = 50, Vp = 64;
  const auto targets_v = ignoring_targets(V, 631);
  auto logits = pair_rand(size_t(kCeRows) * Vp, 632, -3.0f, 3.0f);
  RawPair<int32_t> targets(*cpu_, *gpu_, targets_v);
  RawPair<float> losses(*cpu_, *gpu_, std::vector<float>(kCeRows, 9.0f)),
      lse(*cpu_, *gpu_, std::vector<float>(kCeRows));
  cpu_->cross_entropy_forward(dt(), losses.c(), lse.c(), logits.c(), targets.c(), kCeRows, V, Vp);
  gpu_->cross_entropy_forward(dt(), losses.g(), lse.g(), logits.g(), targets.g(), kCeRows, V, Vp);
  const auto lg = losses.gpu_values();
  EXPECT_LT(rel_err(lg, losses.cpu_values()), 1e-5);
  EXPECT_LT(rel_err(lse.gpu_values(), lse.cpu_values()), 1e-5);
  for (int i = 0; i < kCeRows; ++i)
    if (targets_v[size_t(i)] < 0) {
      EXPECT_EQ(lg[size_t(i)], 0.0f) << "row " << i;
    }
  auto dlogits = pair(std::vector<float>(size_t(kCeRows) * Vp, 5.0f));  // overwritten
  cpu_->cross_entropy_backward(dt(), dlogits.c(), logits.c(), lse.c(), targets.c(), 0.5f, kCeRows,
                               V, Vp);
  gpu_->cross_entropy_backward(dt(), dlogits.g(), logits.g(), lse.g(), targets.g(), 0.5f, kCeRows,
                               V, Vp);
  EXPECT_LT(dlogits.err(), tol());
  expect_ignored_rows_zero(dlogits.gpu_values(), targets_v, Vp, "whole vocabulary");
}

TEST_P(CudaPacked, CrossEntropyShardsIgnoreNegativeTargets) {
  const int V = 50, Vp = 64;
  const auto targets_v = ignoring_targets(V, 641);
  RawPair<int32_t> targets(*cpu_, *gpu_, targets_v);
  for (int shards : {2, 4}) {
    const int rows = Vp / shards;
    RawPair<float> stats(*cpu_, *gpu_, std::vector<float>(size_t(shards) * 2 * kCeRows));
    std::vector<std::vector<float>> shard_logits;
    for (int s = 0; s < shards; ++s) {
      shard_logits.push_back(random_floats(size_t(kCeRows) * rows, 642 + s, -3.0f, 3.0f));
      const int real = std::clamp(V - s * rows, 0, rows);
      auto logits = pair(shard_logits.back());
      cpu_->cross_entropy_shard_forward(dt(), stats.c() + size_t(s) * 2 * kCeRows, logits.c(),
                                        targets.c(), kCeRows, s * rows, real, rows);
      gpu_->cross_entropy_shard_forward(dt(), stats.g() + size_t(s) * 2 * kCeRows, logits.g(),
                                        targets.g(), kCeRows, s * rows, real, rows);
    }
    const auto sg = stats.gpu_values();
    for (int s = 0; s < shards; ++s)
      for (int i = 0; i < kCeRows; ++i)
        if (targets_v[size_t(i)] < 0) {
          EXPECT_EQ(sg[size_t(s) * 2 * kCeRows + kCeRows + i], 0.0f)
              << "shard " << s << " row " << i;
        }
    RawPair<float> losses(*cpu_, *gpu_, std::vector<float>(kCeRows, 9.0f)),
        lse(*cpu_, *gpu_, std::vector<float>(kCeRows));
    cpu_->cross_entropy_combine_shards(losses.c(), lse.c(), stats.c(), targets.c(), shards,
                                       kCeRows);
    gpu_->cross_entropy_combine_shards(losses.g(), lse.g(), stats.g(), targets.g(), shards,
                                       kCeRows);
    const auto lg = losses.gpu_values();
    EXPECT_LT(rel_err(lg, losses.cpu_values()), 1e-5) << shards << " shards";
    EXPECT_LT(rel_err(lse.gpu_values(), lse.cpu_values()), 1e-5) << shards << " shards";
    for (int i = 0; i < kCeRows; ++i)
      if (targets_v[size_t(i)] < 0) {
        EXPECT_EQ(lg[size_t(i)], 0.0f) << shards << " shards, row " << i;
      }
    for (int s = 0; s < shards; ++s) {
      const int real = std::clamp(V - s * rows, 0, rows);
      auto logits = pair(shard_logits[size_t(s)]);
      auto dlogits = pair(std::vector<float>(size_t(kCeRows) * rows, 5.0f));  // overwritten
      cpu_->cross_entropy_shard_backward(dt(), dlogits.c(), logits.c(), lse.c(), targets.c(), 0.5f,
                                         kCeRows, s * rows, real, rows);
      gpu_->cross_entropy_shard_backward(dt(), dlogits.g(), logits.g(), lse.g(), targets.g(), 0.5f,
                                         kCeRows, s * rows, real, rows);
      const std::string at = std::to_string(shards) + " shards, shard " + std::to_string(s);
      EXPECT_LT(dlogits.err(), tol()) << at;
      expect_ignored_rows_zero(dlogits.gpu_values(), targets_v, rows, at);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CudaPacked,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace hybrid::kernels
