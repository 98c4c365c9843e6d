// Communicator tests that run at every world size (included by the np2 and np4
// binaries). Each rank computes the expected result on its own from
// test_value(rank, i), which every rank can evaluate for every other rank.
#pragma once

#include <deque>
#include <numeric>
#include <stdexcept>
#include <string>

#include "engine/comm/collective_args.h"
#include "mpi_test_harness.h"
#include "profiler/comm_tracer.h"
#include "profiler/tracer.h"

namespace hybrid::test {

constexpr DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};

// Uneven parts with empty ones: rank r holds 0 elements when r % 3 == 1.
inline std::vector<size_t> uneven_counts(int world, size_t base) {
  std::vector<size_t> c(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) c[size_t(r)] = r % 3 == 1 ? 0 : base + 7 * size_t(r);
  return c;
}

TEST_F(MpiTest, IdentityAndRankOrder) {
  EXPECT_EQ(comm().name(), "mpi");
  const char* env = std::getenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_NE(env, nullptr);  // no collective issued yet: safe to stop here
  EXPECT_EQ(world(), std::atoi(env));
  // Every rank contributes its rank id; the gathered list is 0..n-1 in order.
  std::vector<float> ids(static_cast<size_t>(world()), -1.0f);
  const float me = float(rank());
  comm().all_gather(&me, ids.data(), std::vector<size_t>(static_cast<size_t>(world()), 1),
                    DType::f32);
  for (int r = 0; r < world(); ++r) EXPECT_EQ(ids[size_t(r)], float(r));
}

TEST_F(MpiTest, AllReduceEveryDtypeAndOp) {
  for (DType dt : kDtypes)
    for (ReduceOp op : kOps)
      for (size_t n : {size_t(0), size_t(1), size_t(1000)}) {
        auto buf = make_buffer(dt, n, [&](size_t i) { return test_value(rank(), i); });
        comm().all_reduce(buf.data(), n, dt, op);
        int bad = 0;
        for (size_t i = 0; i < n; ++i)
          if (element(buf.data(), dt, i) != float(reduce_reference(op, world(), i))) ++bad;
        EXPECT_EQ(bad, 0) << kernels::dtype_name(dt) << " " << op_name(op) << " n=" << n;
      }
}

TEST_F(MpiTest, ReduceScatterUnevenAndEmptyParts) {
  for (DType dt : kDtypes)
    for (ReduceOp op : kOps) {
      const auto counts = uneven_counts(world(), 5);
      const size_t total = engine::comm::sum_counts(counts);
      const size_t off = engine::comm::part_offset(counts, rank());
      const size_t mine = counts[size_t(rank())];
      auto send = make_buffer(dt, total, [&](size_t i) { return test_value(rank(), i, 1); });
      std::vector<std::byte> recv(mine * kernels::dtype_size(dt) + 1, std::byte{0x5a});
      comm().reduce_scatter(send.data(), recv.data(), counts, dt, op);
      int bad = 0;
      for (size_t j = 0; j < mine; ++j)
        if (element(recv.data(), dt, j) != float(reduce_reference(op, world(), off + j, 1))) ++bad;
      EXPECT_EQ(bad, 0) << kernels::dtype_name(dt) << " " << op_name(op);
      EXPECT_EQ(recv.back(), std::byte{0x5a}) << "wrote past this rank's part";

      // recv = this rank's slot of send (ZeRO reduces a flat gradient buffer in place).
      void* slot = send.data() + off * kernels::dtype_size(dt);
      comm().reduce_scatter(send.data(), slot, counts, dt, op);
      bad = 0;
      for (size_t j = 0; j < mine; ++j)
        if (element(slot, dt, j) != float(reduce_reference(op, world(), off + j, 1))) ++bad;
      EXPECT_EQ(bad, 0) << "in place, " << kernels::dtype_name(dt) << " " << op_name(op);
    }
  // Every part empty.
  std::vector<size_t> zeros(static_cast<size_t>(world()), 0);
  comm().reduce_scatter(nullptr, nullptr, zeros, DType::f16, ReduceOp::sum);
}

TEST_F(MpiTest, AllGatherUnevenInPlaceAndEmpty) {
  for (DType dt : kDtypes) {
    const size_t es = kernels::dtype_size(dt);
    const auto counts = uneven_counts(world(), 3);
    const size_t total = engine::comm::sum_counts(counts);
    const size_t mine = counts[size_t(rank())];
    auto expect_gathered = [&](const std::vector<std::byte>& recv, const char* how) {
      int bad = 0;
      size_t off = 0;
      for (int r = 0; r < world(); ++r) {
        for (size_t j = 0; j < counts[size_t(r)]; ++j)
          if (element(recv.data(), dt, off + j) != float(test_value(r, j, 2))) ++bad;
        off += counts[size_t(r)];
      }
      EXPECT_EQ(bad, 0) << how << " " << kernels::dtype_name(dt);
    };
    const auto send = make_buffer(dt, mine, [&](size_t j) { return test_value(rank(), j, 2); });
    std::vector<std::byte> recv(total * es, std::byte{0});
    comm().all_gather(send.data(), recv.data(), counts, dt);
    expect_gathered(recv, "separate buffers");

    // In place: this rank's part already sits in its slot of recv.
    std::vector<std::byte> inplace(total * es, std::byte{0});
    std::byte* slot = inplace.data() + engine::comm::part_offset(counts, rank()) * es;
    if (mine) std::memcpy(slot, send.data(), mine * es);
    comm().all_gather(slot, inplace.data(), counts, dt);
    expect_gathered(inplace, "in place");

    // send overlapping recv anywhere but its slot is refused at issue, on every rank.
    if (total > 0) {
      std::vector<size_t> ones(static_cast<size_t>(world()), 1);
      std::vector<std::byte> buf(static_cast<size_t>(world()) * es);
      const std::byte* wrong = buf.data() + size_t((rank() + 1) % world()) * es;
      EXPECT_THROW(comm().all_gather(wrong, buf.data(), ones, dt), std::invalid_argument);
    }
  }
  std::vector<size_t> zeros(static_cast<size_t>(world()), 0);
  comm().all_gather(nullptr, nullptr, zeros, DType::bf16);
}

TEST_F(MpiTest, BroadcastFromEveryRoot) {
  for (int root = 0; root < world(); ++root)
    for (size_t bytes : {size_t(0), size_t(1), size_t(1001)}) {
      std::vector<uint8_t> buf(bytes + 1, 0xee);
      for (size_t i = 0; i < bytes; ++i)
        buf[i] = rank() == root ? uint8_t(i * 3 + size_t(root)) : uint8_t(0);
      comm().broadcast(buf.data(), bytes, root);
      int bad = 0;
      for (size_t i = 0; i < bytes; ++i)
        if (buf[i] != uint8_t(i * 3 + size_t(root))) ++bad;
      EXPECT_EQ(bad, 0) << "root " << root << " bytes " << bytes;
      EXPECT_EQ(buf[bytes], 0xee);
    }
}

TEST_F(MpiTest, CountersAndRecordsUseNcclTestsBytes) {
  RecordLog log;
  comm().reset_counters();
  comm().set_observer(log.observer());
  const auto counts = uneven_counts(world(), 4);
  const size_t total = engine::comm::sum_counts(counts);
  std::vector<uint16_t> a(total + 64), b(total + 64);
  comm().all_reduce(a.data(), 64, DType::bf16, ReduceOp::sum);
  comm().reduce_scatter(a.data(), b.data(), counts, DType::f16, ReduceOp::sum);
  comm().all_gather(a.data(), b.data(), counts, DType::bf16);
  comm().broadcast(a.data(), 77, world() - 1);
  comm().barrier();
  const auto k = comm().counters();
  using CK = CollectiveKind;
  EXPECT_EQ(k.calls[int(CK::all_reduce)], 1u);
  EXPECT_EQ(k.bytes[int(CK::all_reduce)], 128u);
  EXPECT_EQ(k.bytes[int(CK::reduce_scatter)], total * 2);  // the input: all parts
  EXPECT_EQ(k.bytes[int(CK::all_gather)], total * 2);      // the output: all parts
  EXPECT_EQ(k.bytes[int(CK::broadcast)], 77u);
  EXPECT_EQ(k.calls[int(CK::barrier)], 1u);
  EXPECT_EQ(k.bytes[int(CK::barrier)], 0u);
  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), 5u);  // after the last collective: safe
  const CK kinds[] = {CK::all_reduce, CK::reduce_scatter, CK::all_gather, CK::broadcast,
                      CK::barrier};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(recs[i].kind, kinds[i]);
    EXPECT_EQ(recs[i].world_size, world());
    EXPECT_LE(recs[i].issue_ns, recs[i].start_ns);
    EXPECT_LE(recs[i].start_ns, recs[i].end_ns);
  }
  EXPECT_EQ(recs[0].dtype_bytes, 2);
  EXPECT_EQ(recs[3].bytes, 77u);
}

TEST_F(MpiTest, ManyAsyncOpsInFlightCompleteInIssueOrder) {
  RecordLog log;
  comm().set_observer(log.observer());
  constexpr int kOpsInFlight = 48;
  std::deque<std::vector<std::byte>> bufs;  // stable addresses
  std::vector<engine::comm::HandlePtr> handles;
  std::vector<uint64_t> expected_bytes;
  std::vector<CollectiveKind> expected_kinds;
  const std::vector<size_t> ones(static_cast<size_t>(world()), 1);
  for (int k = 0; k < kOpsInFlight; ++k) {
    const DType dt = kDtypes[k % 3];
    const size_t es = kernels::dtype_size(dt);
    if (k % 4 == 3) {  // an all-gather of one element per rank
      bufs.push_back(make_buffer(dt, 1, [&](size_t) { return test_value(rank(), 0, k); }));
      const void* send = bufs.back().data();
      bufs.emplace_back(static_cast<size_t>(world()) * es);
      handles.push_back(comm().all_gather_async(send, bufs.back().data(), ones, dt));
      expected_kinds.push_back(CollectiveKind::all_gather);
      expected_bytes.push_back(uint64_t(world()) * es);
    } else {  // all-reduces of distinct sizes
      const size_t n = 10 + size_t(k) * 13;
      bufs.push_back(make_buffer(dt, n, [&](size_t i) { return test_value(rank(), i, k); }));
      handles.push_back(comm().all_reduce_async(bufs.back().data(), n, dt, ReduceOp::sum));
      expected_kinds.push_back(CollectiveKind::all_reduce);
      expected_bytes.push_back(n * es);
    }
  }
  // FIFO: once the last op is done, every earlier one is.
  handles.back()->wait();
  int not_ready = 0;
  for (auto& h : handles) not_ready += h->ready() ? 0 : 1;
  EXPECT_EQ(not_ready, 0);
  for (auto& h : handles) h->wait();

  size_t b = 0;
  for (int k = 0; k < kOpsInFlight; ++k) {
    const DType dt = kDtypes[k % 3];
    int bad = 0;
    if (k % 4 == 3) {
      const auto& recv = bufs[b + 1];
      for (int r = 0; r < world(); ++r)
        if (element(recv.data(), dt, size_t(r)) != float(test_value(r, 0, k))) ++bad;
      b += 2;
    } else {
      const auto& buf = bufs[b];
      const size_t n = 10 + size_t(k) * 13;
      for (size_t i = 0; i < n; ++i)
        if (element(buf.data(), dt, i) != float(reduce_reference(ReduceOp::sum, world(), i, k)))
          ++bad;
      b += 1;
    }
    EXPECT_EQ(bad, 0) << "op " << k;
  }
  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), size_t(kOpsInFlight));
  for (int k = 0; k < kOpsInFlight; ++k) {
    EXPECT_EQ(recs[size_t(k)].kind, expected_kinds[size_t(k)]) << "op " << k;
    EXPECT_EQ(recs[size_t(k)].bytes, expected_bytes[size_t(k)]) << "op " << k;
    if (k > 0) {
      // Issued in order, and run one after the other on the one thread.
      EXPECT_LE(recs[size_t(k) - 1].issue_ns, recs[size_t(k)].issue_ns);
      EXPECT_LE(recs[size_t(k) - 1].end_ns, recs[size_t(k)].start_ns);
    }
  }
}

TEST_F(MpiTest, SplitCallsMatchUnsplitResults) {
  // Seven elements per MPI call: every collective below is split into pieces
  // (reduce-scatter and all-gather past the int limit take per-root calls).
  comm().set_chunk_elements(7);
  EXPECT_EQ(comm().chunk_elements(), 7u);
  for (DType dt : {DType::f32, DType::f16}) {
    const size_t es = kernels::dtype_size(dt);
    auto buf = make_buffer(dt, 100, [&](size_t i) { return test_value(rank(), i, 3); });
    comm().all_reduce(buf.data(), 100, dt, ReduceOp::max);
    int bad = 0;
    for (size_t i = 0; i < 100; ++i)
      if (element(buf.data(), dt, i) != float(reduce_reference(ReduceOp::max, world(), i, 3)))
        ++bad;
    EXPECT_EQ(bad, 0) << "all_reduce " << kernels::dtype_name(dt);

    const auto counts = uneven_counts(world(), 9);  // parts of 9, 0, 23, ... elements
    const size_t total = engine::comm::sum_counts(counts);
    const size_t off = engine::comm::part_offset(counts, rank());
    const size_t mine = counts[size_t(rank())];
    auto send = make_buffer(dt, total, [&](size_t i) { return test_value(rank(), i, 4); });
    std::vector<std::byte> recv(mine * es);
    comm().reduce_scatter(send.data(), recv.data(), counts, dt, ReduceOp::sum);
    bad = 0;
    for (size_t j = 0; j < mine; ++j)
      if (element(recv.data(), dt, j) !=
          float(reduce_reference(ReduceOp::sum, world(), off + j, 4)))
        ++bad;
    EXPECT_EQ(bad, 0) << "reduce_scatter " << kernels::dtype_name(dt);

    auto part = make_buffer(dt, mine, [&](size_t j) { return test_value(rank(), j, 5); });
    std::vector<std::byte> gathered(total * es);
    comm().all_gather(part.data(), gathered.data(), counts, dt);
    std::vector<std::byte> inplace(total * es);
    if (mine) std::memcpy(inplace.data() + off * es, part.data(), mine * es);
    comm().all_gather(inplace.data() + off * es, inplace.data(), counts, dt);
    bad = 0;
    size_t o = 0;
    for (int r = 0; r < world(); ++r) {
      for (size_t j = 0; j < counts[size_t(r)]; ++j) {
        const float want = float(test_value(r, j, 5));
        if (element(gathered.data(), dt, o + j) != want) ++bad;
        if (element(inplace.data(), dt, o + j) != want) ++bad;
      }
      o += counts[size_t(r)];
    }
    EXPECT_EQ(bad, 0) << "all_gather " << kernels::dtype_name(dt);
  }
  std::vector<uint8_t> bytes(50);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = rank() == 0 ? uint8_t(200 - i) : 0;
  comm().broadcast(bytes.data(), bytes.size(), 0);
  int bad = 0;
  for (size_t i = 0; i < bytes.size(); ++i) bad += bytes[i] == uint8_t(200 - i) ? 0 : 1;
  EXPECT_EQ(bad, 0) << "broadcast";
  EXPECT_THROW(comm().set_chunk_elements(0), std::invalid_argument);
}

TEST_F(MpiTest, FailuresAreRethrownFromWait) {
  comm().set_observer([](const CommRecord&) { throw std::runtime_error("observer failed"); });
  float x = 1.0f;
  auto h = comm().all_reduce_async(&x, 1, DType::f32, ReduceOp::sum);
  EXPECT_THROW(h->wait(), std::runtime_error);
  EXPECT_TRUE(h->ready());
  EXPECT_EQ(x, float(world()));  // the collective itself completed
  comm().set_observer({});
  // The communicator carries on.
  float y = 2.0f;
  comm().all_reduce(&y, 1, DType::f32, ReduceOp::sum);
  EXPECT_EQ(y, 2.0f * float(world()));
}

TEST_F(MpiTest, BadArgumentsAreRefusedAtIssue) {
  comm().reset_counters();
  std::vector<float> a(16), b(16);
  EXPECT_THROW(comm().all_gather(a.data(), b.data(), {1}, DType::f32), std::invalid_argument);
  EXPECT_THROW(comm().reduce_scatter(a.data(), b.data(),
                                     std::vector<size_t>(static_cast<size_t>(world()) + 1, 1),
                                     DType::f32, ReduceOp::sum),
               std::invalid_argument);
  EXPECT_THROW(comm().broadcast(a.data(), 4, world()), std::invalid_argument);
  EXPECT_THROW(comm().broadcast(a.data(), 4, -1), std::invalid_argument);
  EXPECT_THROW(comm().all_reduce(nullptr, 3, DType::f16, ReduceOp::sum), std::invalid_argument);
  EXPECT_EQ(comm().counters().total_bytes(), 0u);
  uint64_t calls = 0;
  for (auto c : comm().counters().calls) calls += c;
  EXPECT_EQ(calls, 0u);
}

TEST_F(MpiTest, RunOnCommThreadKeepsIssueOrder) {
  float x = float(rank() + 1);
  auto h1 = comm().all_reduce_async(&x, 1, DType::f32, ReduceOp::sum);
  int raw = 0;
  // Queued behind the all-reduce: sees its result; does its own MPI call.
  float seen = -1.0f;
  auto h2 = comm().run_on_comm_thread([&](MPI_Comm c) {
    seen = x;
    int one = 1;
    engine::comm::check_mpi(MPI_Allreduce(&one, &raw, 1, MPI_INT, MPI_SUM, c), "MPI_Allreduce");
  });
  h2->wait();
  EXPECT_TRUE(h1->ready());
  const float want = float(world() * (world() + 1) / 2);
  EXPECT_EQ(seen, want);
  EXPECT_EQ(raw, world());
}

TEST_F(MpiTest, CommTracerSeesEveryCollective) {
  profiler::Tracer tracer(rank());
  tracer.set_enabled(true);
  profiler::CommTracer ct({}, &tracer, test_clock_ns);
  comm().set_observer(ct.observer());
  ct.begin_step(0);
  std::vector<float> a(256, 1.0f);
  for (int i = 0; i < 3; ++i) comm().all_reduce(a.data(), 256, DType::f32, ReduceOp::sum);
  comm().all_reduce(a.data(), 64, DType::f32, ReduceOp::sum);
  comm().barrier();
  comm().set_observer({});
  const auto stats = ct.stats();
  ASSERT_EQ(stats.size(), 3u);  // after the last collective: safe
  EXPECT_EQ(stats[0].kind, CollectiveKind::all_reduce);
  EXPECT_EQ(stats[0].msg_bytes, 256u);
  EXPECT_EQ(stats[0].count, 1u);
  EXPECT_EQ(stats[1].msg_bytes, 1024u);
  EXPECT_EQ(stats[1].count, 3u);
  EXPECT_EQ(stats[2].kind, CollectiveKind::barrier);
  const auto step = ct.step_totals(0);
  EXPECT_EQ(step.collectives, 5u);
  EXPECT_EQ(step.bytes, 3u * 1024 + 256);
  EXPECT_GT(step.comm_ns, 0);
  const auto events = tracer.drain();
  ASSERT_EQ(events.size(), 5u);
  for (const auto& e : events) {
    EXPECT_EQ(e.lane, profiler::kLaneComm);
    EXPECT_EQ(e.rank, rank());
    EXPECT_EQ(e.step, 0);
  }
  EXPECT_EQ(tracer.name(events.back().name_id), "barrier");
}

}  // namespace hybrid::test
