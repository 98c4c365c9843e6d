// The all_to_all collective and the 1-bit compressed all-reduce at every world
// size (included by the np2 and np4 binaries). Each rank simulates all ranks
// with the naive reference (tests/engine/compressed_all_reduce_reference.h)
// and checks its own result and error buffers against it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/comm/compressed_all_reduce.h"
#include "mpi_test_harness.h"
#include "profiler/comm_tracer.h"
#include "tests/engine/compressed_all_reduce_reference.h"

namespace hybrid::test {

// The CPU backend: the buffers here are host memory.
inline kernels::Backend& host_backend() {
  static const auto cpu = kernels::make_cpu_backend();
  return *cpu;
}

// Byte i of the block `from` sends `to`: names both ends and the position.
inline uint8_t block_byte(int from, int to, size_t i) {
  return uint8_t(from * 41 + to * 13 + int(i % 251));
}

// all_to_all on `c` (the world or a group) with blocks of `bytes`: block j of
// the send buffer reaches rank j, block i of recv came from rank i.
inline size_t all_to_all_mismatches(Communicator& c, size_t bytes) {
  const size_t w = size_t(c.world_size());
  std::vector<uint8_t> send(w * bytes), recv(w * bytes, 0xEE);
  for (size_t j = 0; j < w; ++j)
    for (size_t i = 0; i < bytes; ++i) send[j * bytes + i] = block_byte(c.rank(), int(j), i);
  c.all_to_all(send.data(), recv.data(), bytes);
  size_t bad = 0;
  for (size_t from = 0; from < w; ++from)
    for (size_t i = 0; i < bytes; ++i)
      bad += recv[from * bytes + i] != block_byte(int(from), c.rank(), i);
  return bad;
}

TEST_F(MpiTest, AllToAllDeliversEachBlockToItsRank) {
  RecordLog log;
  comm().set_observer(log.observer());
  for (size_t bytes : {size_t(0), size_t(1), size_t(1000)})
    EXPECT_EQ(all_to_all_mismatches(comm(), bytes), 0u) << bytes << " bytes per rank";
  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(recs[k].kind, CollectiveKind::all_to_all);
    EXPECT_EQ(recs[k].world_size, world());
  }
  EXPECT_EQ(recs[2].bytes, 1000u * uint64_t(world()));  // nccl-tests: the whole send buffer
}

TEST_F(MpiTest, AllToAllSplitPastTheChunkLimit) {
  comm().set_chunk_elements(7);  // 1000-byte blocks in pieces of 7
  EXPECT_EQ(all_to_all_mismatches(comm(), 1000), 0u);
  EXPECT_EQ(all_to_all_mismatches(comm(), 7), 0u);
}

TEST_F(MpiTest, AllToAllInAGroupBooksTheGroup) {
  RecordLog log;  // outlives the group, whose observer it is
  auto group = comm().split(rank() % 2, rank());
  group->set_observer(log.observer());
  EXPECT_EQ(all_to_all_mismatches(*group, 33), 0u);
  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].world_size, group->world_size());
  EXPECT_EQ(recs[0].bytes, 33u * uint64_t(group->world_size()));
}

TEST_F(MpiTest, AllToAllRefusesOverlappingBuffers) {
  std::vector<uint8_t> buf(64 * size_t(world()));
  try {
    comm().all_to_all(buf.data(), buf.data() + 8, 16);
    ADD_FAILURE() << "overlapping send and recv were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("all_to_all: send and recv overlap"), std::string::npos)
        << e.what();
  }
}

// Several tensor sizes (one a multiple of the padding, the others padded),
// each over 5 successive calls with its errors carried.
TEST_F(MpiTest, CompressedAllReduceMatchesTheReferenceOnEveryRank) {
  // max |fp32 − double| per buffer, over the scale that made it: the largest
  // server scale for the result, this rank's worker or server scale for its errors.
  constexpr double kTolerance = 1e-5;
  // A sign taken at |m| < 1e-6·scale could legitimately differ between fp32
  // and double; the data must have none (measured: they differ by < 5e-7·scale).
  constexpr double kTieMargin = 5e-6;
  double worst = 0.0;
  for (size_t n : {size_t(3), size_t(64), size_t(1000), size_t(4099)}) {
    engine::comm::CompressionErrors errors(n, world());
    CompressedAllReduceReference ref(n, world());
    for (int call = 0; call < 5; ++call) {
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < world(); ++r) inputs.push_back(compressed_test_input(r, call, n));
      const std::vector<double> want = ref.call(inputs);
      std::vector<float> buf = inputs[size_t(rank())];
      engine::comm::compressed_all_reduce(host_backend(), comm(), buf.data(), n, errors);

      // max |got − want| over `scale`: the result's and the errors' natural unit.
      auto rel = [&worst](const auto& got, const std::vector<double>& w, double scale) {
        double diff = 0;
        for (size_t i = 0; i < w.size(); ++i)
          diff = std::max(diff, std::abs(double(got[i]) - w[i]));
        worst = std::max(worst, diff / scale);
        return diff / scale;
      };
      double result_scale = 0;
      for (int r = 0; r < world(); ++r) result_scale = std::max(result_scale, ref.server_scale(r));
      const std::string at = "n " + std::to_string(n) + " call " + std::to_string(call);
      EXPECT_LE(rel(buf, want, result_scale), kTolerance) << "result, " << at;
      EXPECT_LE(rel(errors.worker, ref.worker_error(rank()), ref.worker_scale(rank())), kTolerance)
          << "worker error, " << at;
      EXPECT_LE(rel(errors.server, ref.server_error(rank()), ref.server_scale(rank())), kTolerance)
          << "server error, " << at;

      // Every rank holds the same result, bit for bit.
      std::vector<float> all(n * size_t(world()));
      comm().all_gather(buf.data(), all.data(), std::vector<size_t>(size_t(world()), n),
                        DType::f32);
      size_t differ = 0;
      for (size_t r = 0; r < size_t(world()); ++r)
        differ += std::memcmp(all.data() + r * n, buf.data(), n * sizeof(float)) != 0;
      EXPECT_EQ(differ, 0u) << "ranks disagree, " << at;
    }
    EXPECT_GT(ref.smallest_margin(), kTieMargin) << "test data near a sign tie, n " << n;
    if (rank() == 0)
      std::printf("[compressed] n=%zu on %d ranks: smallest |m|/scale %.2g\n", n, world(),
                  ref.smallest_margin());
  }
  if (rank() == 0)
    std::printf("[compressed] largest relative difference to the double reference: %.2g\n", worst);
}

// The tracer's bytes for one call equal the closed form, and on the wire they
// are at most 1/28 of an fp32 all-reduce of the same tensor, measured through
// the same tracer (GPT-2 small's c_attn weight, 768 × 2304).
TEST_F(MpiTest, TracerBooksTheClosedFormAtMostOne28thOfFp32) {
  const size_t n = 768 * 2304;
  profiler::CommTracer tracer({}, nullptr, test_clock_ns);
  comm().set_observer(tracer.observer());
  auto booked = [&] {
    uint64_t message = 0;
    double sent = 0;
    for (const auto& s : tracer.stats()) {
      message += s.total_bytes;
      sent += double(s.total_bytes) * profiler::bus_factor(s.kind, world());
    }
    return engine::comm::CommVolume{message, sent};
  };
  std::vector<float> buf = compressed_test_input(rank(), 0, n);
  engine::comm::CompressionErrors errors(n, world());
  engine::comm::compressed_all_reduce(host_backend(), comm(), buf.data(), n, errors);
  const auto compressed = booked();
  const auto closed = engine::comm::compressed_all_reduce_volume(n, world());
  EXPECT_EQ(compressed.message, closed.message);
  EXPECT_DOUBLE_EQ(compressed.sent, closed.sent);
  int all_to_alls = 0, all_gathers = 0;
  for (const auto& s : tracer.stats()) {
    all_to_alls += s.kind == CollectiveKind::all_to_all ? int(s.count) : 0;
    all_gathers += s.kind == CollectiveKind::all_gather ? int(s.count) : 0;
  }
  EXPECT_EQ(all_to_alls, 2);
  EXPECT_EQ(all_gathers, 2);

  tracer.reset();
  comm().all_reduce(buf.data(), n, DType::f32, ReduceOp::sum);
  const auto fp32 = booked();
  EXPECT_EQ(fp32.message, engine::comm::fp32_all_reduce_volume(n, world()).message);
  EXPECT_LE(compressed.sent * 28.0, fp32.sent)
      << compressed.sent << " bytes sent compressed, " << fp32.sent << " fp32";
  if (rank() == 0)
    std::printf(
        "[compressed] n=%zu on %d ranks: sent %.0f vs fp32 %.0f bytes (1/%.2f); message "
        "bytes %llu vs %llu (1/%.2f)\n",
        n, world(), compressed.sent, fp32.sent, fp32.sent / compressed.sent,
        (unsigned long long)compressed.message, (unsigned long long)fp32.message,
        double(fp32.message) / double(compressed.message));
}

// Several tensors in one call: every result and error buffer equals, bit for
// bit, what one call per tensor gives (an empty tensor included), and the
// tracer books one all_to_all and one all_gather per phase carrying the sum of
// the tensors' closed-form bytes.
TEST_F(MpiTest, GroupedCallEqualsOneCallPerTensorInFourCollectives) {
  const std::vector<size_t> sizes = {3, 64, 0, 1000, 4099};
  std::vector<engine::comm::CompressionErrors> grouped_errors, single_errors;
  for (size_t n : sizes) {
    grouped_errors.emplace_back(n, world());
    single_errors.emplace_back(n, world());
  }
  profiler::CommTracer tracer({}, nullptr, test_clock_ns);
  for (int call = 0; call < 3; ++call) {
    std::vector<std::vector<float>> grouped, single;
    std::vector<engine::comm::CompressedTensor> tensors;
    for (size_t t = 0; t < sizes.size(); ++t) {
      grouped.push_back(compressed_test_input(rank(), call * 7 + int(t), sizes[t]));
      single.push_back(grouped.back());
    }
    for (auto& g : grouped) tensors.push_back({g.data(), g.size()});
    for (size_t t = 0; t < sizes.size(); ++t)
      engine::comm::compressed_all_reduce(host_backend(), comm(), single[t].data(), sizes[t],
                                          single_errors[t]);
    tracer.reset();
    comm().set_observer(tracer.observer());
    engine::comm::compressed_all_reduce(host_backend(), comm(), tensors, grouped_errors);
    comm().set_observer({});
    for (size_t t = 0; t < sizes.size(); ++t) {
      EXPECT_EQ(grouped[t], single[t]) << "tensor " << t << " call " << call;
      EXPECT_TRUE(std::ranges::equal(grouped_errors[t].worker, single_errors[t].worker))
          << "tensor " << t;
      EXPECT_TRUE(std::ranges::equal(grouped_errors[t].server, single_errors[t].server))
          << "tensor " << t;
    }
    uint64_t message = 0, want = 0;
    int records = 0;
    for (const auto& s : tracer.stats()) message += s.total_bytes, records += int(s.count);
    for (size_t n : sizes) want += engine::comm::compressed_all_reduce_volume(n, world()).message;
    EXPECT_EQ(records, 4);
    EXPECT_EQ(message, want);
  }
  std::vector<engine::comm::CompressionErrors> too_few(1);
  std::vector<float> a(8);
  const std::vector<engine::comm::CompressedTensor> two = {{a.data(), 4}, {a.data() + 4, 4}};
  EXPECT_THROW(engine::comm::compressed_all_reduce(host_backend(), comm(), two, too_few),
               std::invalid_argument);
}

}  // namespace hybrid::test
