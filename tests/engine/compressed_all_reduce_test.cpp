// The 1-bit compressed all-reduce on one process: sign packing, the padding
// rule, the single-rank call against the naive reference
// (compressed_all_reduce_reference.h), the all_to_all of the single
// communicator, the tracer's new kind, and the byte closed forms, GPT-2 small's
// tensors included. Multi-rank runs: tests/mpi/compressed_all_reduce_*.
#include "engine/comm/compressed_all_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/sign_bits.h"
#include "profiler/comm_tracer.h"
#include "tests/engine/compressed_all_reduce_reference.h"

namespace hybrid::test {
namespace {

using engine::comm::CommVolume;
using engine::comm::compressed_all_reduce;
using engine::comm::compressed_all_reduce_volume;
using engine::comm::compressed_padded_size;
using engine::comm::CompressionErrors;
using engine::comm::fp32_all_reduce_volume;
using profiler::CollectiveKind;
using profiler::CommRecord;

// max |got − want| over `scale`, the unit of the values compared (a scale of
// the compression that made them; an error may cancel to ~0).
template <class Values>  // a vector or the errors' spans
double scaled_difference(const Values& got, const std::vector<double>& want, double scale) {
  double diff = 0.0;
  for (size_t i = 0; i < want.size(); ++i)
    diff = std::max(diff, std::abs(double(got[i]) - want[i]));
  return diff / scale;
}

// The CPU backend: the buffers here are host memory.
kernels::Backend& host() {
  static const auto cpu = kernels::make_cpu_backend();
  return *cpu;
}

// fp32 with double norms against all-double: a few fp32 roundings per value,
// carried through the error feedback of a few calls.
constexpr double kTolerance = 1e-5;

TEST(SignBits, PacksMostSignificantBitFirstWithZeroAndNanAsPlus) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float x[] = {1.0f, -1.0f, 0.0f, -0.0f, -2.0f, 3.0f, -5.0f, nan, 0.5f, -0.25f};
  uint8_t bits[2] = {0xAA, 0xAA};
  kernels::pack_signs(x, 10, bits);
  EXPECT_EQ(bits[0], 0b10110101);  // + − + + − + − +
  EXPECT_EQ(bits[1], 0b10000000);  // + −, the unused bits cleared
  EXPECT_EQ(kernels::packed_sign_bytes(10), 2u);
  EXPECT_EQ(kernels::packed_sign_bytes(16), 2u);
  float out[10] = {};
  kernels::unpack_signs(bits, 10, 2.5f, out);
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ(out[i], (std::isnan(x[i]) || x[i] >= 0.0f) ? 2.5f : -2.5f) << i;
}

TEST(SignBits, RoundTripsEveryPatternOfAByte) {
  for (int byte = 0; byte < 256; ++byte) {
    float x[8];
    for (int k = 0; k < 8; ++k) x[k] = (byte >> (7 - k)) & 1 ? 0.5f + float(k) : -1.0f - float(k);
    uint8_t packed = 0;
    kernels::pack_signs(x, 8, &packed);
    EXPECT_EQ(int(packed), byte);
    for (size_t k = 0; k < 8; ++k)
      EXPECT_EQ(kernels::sign_of_bit(&packed, k), x[k] < 0 ? -1.0f : 1.0f);
  }
}

TEST(CompressedPadding, IsDeepSpeedsMultipleOfWorldTimesDivider) {
  // W·lcm(W, 8): 8 on 1 rank, 16 on 2, 72 on 3, 32 on 4, 64 on 8, 256 on 16.
  EXPECT_EQ(compressed_padded_size(0, 4), 0u);
  EXPECT_EQ(compressed_padded_size(1, 1), 8u);
  EXPECT_EQ(compressed_padded_size(16, 2), 16u);
  EXPECT_EQ(compressed_padded_size(17, 2), 32u);
  EXPECT_EQ(compressed_padded_size(100, 3), 144u);
  EXPECT_EQ(compressed_padded_size(768, 4), 768u);
  EXPECT_EQ(compressed_padded_size(769, 4), 800u);
  EXPECT_EQ(compressed_padded_size(65, 8), 128u);
  EXPECT_EQ(compressed_padded_size(257, 16), 512u);
  for (int w = 1; w <= 12; ++w)
    for (size_t n = 1; n < 300; n += 7) {
      const size_t p = compressed_padded_size(n, w);
      EXPECT_EQ(p, CompressedAllReduceReference(n, w).padded()) << n << " on " << w;
      EXPECT_TRUE(p >= n && p % size_t(w) == 0 && (p / size_t(w)) % 8 == 0) << n << " on " << w;
    }
  EXPECT_THROW(compressed_padded_size(10, 0), std::invalid_argument);
  const CompressionErrors e(769, 4);
  EXPECT_EQ(e.worker.size(), 800u);
  EXPECT_EQ(e.server.size(), 200u);
  EXPECT_EQ(e.bytes(), 1000u * 4u);
}

struct Booked {
  std::mutex mutex;
  std::vector<CommRecord> records;
  void attach(engine::comm::Communicator& c) {
    c.set_observer([this](const CommRecord& r) {
      std::lock_guard lock(mutex);
      records.push_back(r);
    });
  }
};

TEST(CompressedAllReduce, OneRankMatchesTheReferenceOverSuccessiveCalls) {
  auto comm = engine::comm::make_single_communicator();
  Booked booked;
  booked.attach(*comm);
  for (size_t n : {size_t(1), size_t(5), size_t(64), size_t(1001)}) {
    CompressionErrors errors(n, 1);
    CompressedAllReduceReference ref(n, 1);
    for (int call = 0; call < 5; ++call) {
      std::vector<float> buf = compressed_test_input(0, call, n);
      const std::vector<double> want = ref.call({buf});
      booked.records.clear();
      compressed_all_reduce(host(), *comm, buf.data(), n, errors);
      EXPECT_LE(scaled_difference(buf, want, ref.server_scale(0)), kTolerance)
          << "n " << n << " call " << call;
      EXPECT_LE(scaled_difference(errors.worker, ref.worker_error(0), ref.worker_scale(0)),
                kTolerance);
      EXPECT_LE(scaled_difference(errors.server, ref.server_error(0), ref.server_scale(0)),
                kTolerance);
      // One rank: a two-valued tensor, ±server scale.
      for (float v : buf) EXPECT_EQ(std::abs(v), std::abs(buf[0]));
      ASSERT_EQ(booked.records.size(), 4u);
      const CollectiveKind order[] = {CollectiveKind::all_to_all, CollectiveKind::all_gather,
                                      CollectiveKind::all_to_all, CollectiveKind::all_gather};
      uint64_t message = 0;
      for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(booked.records[k].kind, order[k]);
        message += booked.records[k].bytes;
      }
      EXPECT_EQ(message, compressed_all_reduce_volume(n, 1).message);
    }
    // Below this, fp32 and double could take different signs legitimately.
    EXPECT_GT(ref.smallest_margin(), 5e-6) << "test data near a sign tie";
  }
}

TEST(CompressedAllReduce, RefusesErrorsOfAnotherShapeAndSkipsEmptyTensors) {
  auto comm = engine::comm::make_single_communicator();
  std::vector<float> buf(100, 1.0f);
  CompressionErrors wrong(90, 1);
  try {
    compressed_all_reduce(host(), *comm, buf.data(), 100, wrong);
    ADD_FAILURE() << "errors for 90 values were accepted for 100";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("errors hold 96 worker and 96 server values; a tensor "
                                         "of 100 on 1 ranks needs 104 and 104"),
              std::string::npos)
        << e.what();
  }
  CompressionErrors none(0, 1);
  compressed_all_reduce(host(), *comm, nullptr, 0, none);
  EXPECT_EQ(comm->counters().total_bytes(), 0u);
  EXPECT_EQ(compressed_all_reduce_volume(0, 4).message, 0u);
}

TEST(CompressedAllReduce, ResetZeroesTheErrors) {
  auto comm = engine::comm::make_single_communicator();
  CompressionErrors errors(40, 1);
  std::vector<float> buf = compressed_test_input(0, 0, 40);
  compressed_all_reduce(host(), *comm, buf.data(), 40, errors);
  EXPECT_NE(std::accumulate(errors.worker.begin(), errors.worker.end(), 0.0), 0.0);
  errors.reset();
  for (float v : errors.worker) EXPECT_EQ(v, 0.0f);
  for (float v : errors.server) EXPECT_EQ(v, 0.0f);
}

TEST(AllToAllSingle, IsOneCopyBookedAsAllToAll) {
  auto comm = engine::comm::make_single_communicator();
  Booked booked;
  booked.attach(*comm);
  std::vector<uint8_t> send(37), recv(37, 0);
  for (size_t i = 0; i < send.size(); ++i) send[i] = uint8_t(i * 7 + 3);
  comm->all_to_all(send.data(), recv.data(), 37);
  EXPECT_EQ(recv, send);
  ASSERT_EQ(booked.records.size(), 1u);
  EXPECT_EQ(booked.records[0].kind, CollectiveKind::all_to_all);
  EXPECT_EQ(booked.records[0].bytes, 37u);
  EXPECT_EQ(comm->counters().calls[int(CollectiveKind::all_to_all)], 1u);
  EXPECT_THROW(comm->all_to_all(send.data(), send.data() + 1, 20), std::invalid_argument);
  EXPECT_THROW(comm->all_to_all(nullptr, recv.data(), 4), std::invalid_argument);
  comm->all_to_all(nullptr, nullptr, 0);  // nothing to move: still a collective
  EXPECT_EQ(comm->counters().calls[int(CollectiveKind::all_to_all)], 2u);
}

TEST(AllToAllKind, IsNamedParsedAndPricedLikeNcclTests) {
  EXPECT_EQ(profiler::collective_name(CollectiveKind::all_to_all), "all_to_all");
  EXPECT_EQ(profiler::parse_collective("all_to_all"), CollectiveKind::all_to_all);
  EXPECT_EQ(profiler::parse_collective("all_to_all_single"), CollectiveKind::all_to_all);
  EXPECT_DOUBLE_EQ(profiler::bus_factor(CollectiveKind::all_to_all, 4), 0.75);
  EXPECT_EQ(int(CollectiveKind::all_to_all), profiler::kCollectiveKindCount - 1);
}

TEST(CompressedVolume, ClosedFormsAgreeWithCountingTheCollectives) {
  for (int w : {1, 2, 3, 4, 8})
    for (size_t n : {size_t(1), size_t(768), size_t(2304), size_t(589'824), size_t(38'597'376)}) {
      const size_t p = compressed_padded_size(n, w), per_rank = p / size_t(w) / 8;
      // Counted: all-to-all of W blocks, all-gather of W scales, twice.
      const uint64_t message = 2 * (uint64_t(w) * per_rank + uint64_t(w) * 4);
      const double factor = double(w - 1) / double(w);
      const CommVolume c = compressed_all_reduce_volume(n, w);
      EXPECT_EQ(c.message, message) << n << " on " << w;
      EXPECT_NEAR(c.sent, double(message) * factor, 1e-6 * double(message)) << n << " on " << w;
      const CommVolume f = fp32_all_reduce_volume(n, w);
      EXPECT_EQ(f.message, 4 * uint64_t(n));
      EXPECT_NEAR(f.sent, 4.0 * double(n) * 2.0 * factor, 1e-6 * double(n));
    }
}

// GPT-2 small (124M), one compressed all-reduce per parameter tensor as
// DeepSpeed's OneBitAdam issues them: the bytes sent per step are at most
// 1/28 of the fp32 all-reduce's (the target), on 2 and 4 ranks.
TEST(CompressedVolume, Gpt2SmallSendsAtMostOne28thOfFp32) {
  const size_t C = 768, V = 50257, T = 1024, L = 12;
  std::vector<size_t> tensors = {V * C, T * C};
  for (size_t l = 0; l < L; ++l)
    for (size_t t : {C, C, C * 3 * C, 3 * C, C * C, C, C, C, C * 4 * C, 4 * C, 4 * C * C, C})
      tensors.push_back(t);
  tensors.push_back(C);
  tensors.push_back(C);
  ASSERT_EQ(std::accumulate(tensors.begin(), tensors.end(), size_t(0)), size_t(124'439'808));
  for (int w : {2, 4}) {
    double compressed = 0, fp32 = 0, compressed_msg = 0, fp32_msg = 0;
    for (size_t n : tensors) {
      compressed += compressed_all_reduce_volume(n, w).sent;
      fp32 += fp32_all_reduce_volume(n, w).sent;
      compressed_msg += double(compressed_all_reduce_volume(n, w).message);
      fp32_msg += double(fp32_all_reduce_volume(n, w).message);
    }
    std::printf(
        "GPT-2 small on %d ranks: %.0f bytes sent compressed, %.0f fp32: 1/%.2f "
        "(message bytes 1/%.2f)\n",
        w, compressed, fp32, fp32 / compressed, fp32_msg / compressed_msg);
    EXPECT_LE(compressed * 28.0, fp32) << w << " ranks";
    EXPECT_GT(compressed * 32.0, fp32) << "below 1 bit per value: the count is wrong";
  }
}

}  // namespace
}  // namespace hybrid::test
