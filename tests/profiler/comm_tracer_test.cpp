// The comm tracer against nccl-tests' definitions (algbw = bytes / time, busbw =
// algbw × 2(n−1)/n for all-reduce, (n−1)/n for all-gather and reduce-scatter, 1
// for broadcast), its aggregation, DeepSpeed-style filters, exposed-time
// accounting and the Tracer events it emits. Time comes from a manual clock, so
// every figure below is exact.
#include "profiler/comm_tracer.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <thread>

#include "profiler/tracer.h"

namespace hybrid::profiler {
namespace {

CommRecord rec(CollectiveKind k, uint64_t bytes, int world, int64_t issue, int64_t start,
               int64_t end) {
  return {.kind = k,
          .bytes = bytes,
          .world_size = world,
          .issue_ns = issue,
          .start_ns = start,
          .end_ns = end};
}

struct ManualClock {
  int64_t now = 0;
  std::function<int64_t()> fn() {
    return [this] { return now; };
  }
};

TEST(CommTracerFormulas, AlgbwIsBytesPerNanosecond) {
  // 1,000,000 bytes in 250 us: 4 GB/s (1 GB = 1e9 bytes).
  const auto r = rec(CollectiveKind::all_reduce, 1'000'000, 4, 0, 0, 250'000);
  EXPECT_DOUBLE_EQ(algbw_gbps(r), 4.0);
  // 64 MiB in 10 ms.
  const auto big = rec(CollectiveKind::all_gather, 64ull << 20, 2, 0, 5, 5 + 10'000'000);
  EXPECT_NEAR(algbw_gbps(big), 67108864.0 / 0.010 / 1e9, 1e-12);
  // A zero-length interval gives 0, never inf.
  EXPECT_EQ(algbw_gbps(rec(CollectiveKind::all_reduce, 4096, 2, 7, 7, 7)), 0.0);
}

TEST(CommTracerFormulas, BusbwMatchesNcclTestsForEveryOpAndWorldSize) {
  // Hand-derived from nccl-tests' PERFORMANCE.md for algbw = 4 GB/s.
  struct Case {
    CollectiveKind kind;
    int n;
    double busbw;
  };
  const Case cases[] = {
      {CollectiveKind::all_reduce, 1, 0.0},
      {CollectiveKind::all_reduce, 2, 4.0},
      {CollectiveKind::all_reduce, 3, 16.0 / 3},
      {CollectiveKind::all_reduce, 4, 6.0},
      {CollectiveKind::all_reduce, 8, 7.0},
      {CollectiveKind::all_gather, 1, 0.0},
      {CollectiveKind::all_gather, 2, 2.0},
      {CollectiveKind::all_gather, 4, 3.0},
      {CollectiveKind::all_gather, 8, 3.5},
      {CollectiveKind::reduce_scatter, 2, 2.0},
      {CollectiveKind::reduce_scatter, 3, 8.0 / 3},
      {CollectiveKind::reduce_scatter, 8, 3.5},
      {CollectiveKind::broadcast, 1, 4.0},
      {CollectiveKind::broadcast, 4, 4.0},
      {CollectiveKind::barrier, 4, 0.0},
      {CollectiveKind::send, 2, 4.0},  // point-to-point: one link, busbw = algbw
      {CollectiveKind::recv, 2, 4.0},
      {CollectiveKind::send, 8, 4.0},
  };
  for (const auto& c : cases) {
    const auto r = rec(c.kind, 1'000'000, c.n, 0, 1000, 251'000);
    EXPECT_NEAR(busbw_gbps(r), c.busbw, 1e-12) << collective_name(c.kind) << " n=" << c.n;
  }
  EXPECT_THROW(bus_factor(CollectiveKind::all_reduce, 0), std::invalid_argument);
  // A barrier moves no bytes: both bandwidths are 0.
  const auto b = rec(CollectiveKind::barrier, 0, 4, 0, 0, 1000);
  EXPECT_EQ(algbw_gbps(b), 0.0);
  EXPECT_EQ(busbw_gbps(b), 0.0);
}

TEST(CommTracerFormulas, ParsesDeepSpeedOpNames) {
  EXPECT_EQ(parse_collective("all_reduce"), CollectiveKind::all_reduce);
  EXPECT_EQ(parse_collective("all_gather_into_tensor"), CollectiveKind::all_gather);
  EXPECT_EQ(parse_collective("reduce_scatter_tensor"), CollectiveKind::reduce_scatter);
  EXPECT_EQ(parse_collective("broadcast"), CollectiveKind::broadcast);
  EXPECT_EQ(parse_collective("barrier"), CollectiveKind::barrier);
  EXPECT_EQ(parse_collective("send"), CollectiveKind::send);
  EXPECT_EQ(parse_collective("recv"), CollectiveKind::recv);
  EXPECT_EQ(parse_collective("isend"), CollectiveKind::send);
  EXPECT_EQ(parse_collective("irecv"), CollectiveKind::recv);
  try {
    parse_collective("alltoall");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'alltoall'"), std::string::npos) << e.what();
  }
}

TEST(CommTracerAggregation, GroupsByOpAndMessageSize) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  t.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 0, 1000));
  t.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 1000, 3000));
  t.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 3000, 6000));
  t.on_record(rec(CollectiveKind::all_reduce, 1 << 20, 2, 0, 6000, 16000));
  t.on_record(rec(CollectiveKind::all_gather, 4096, 4, 0, 16000, 20000));
  t.on_record(rec(CollectiveKind::all_gather, 4096, 4, 0, 20000, 22000));

  const auto s = t.stats();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].kind, CollectiveKind::all_reduce);
  EXPECT_EQ(s[0].msg_bytes, 4096u);
  EXPECT_EQ(s[0].count, 3u);
  EXPECT_EQ(s[0].total_bytes, 3u * 4096);
  EXPECT_EQ(s[0].total_ns, 6000);
  EXPECT_EQ(s[0].min_ns, 1000);
  EXPECT_EQ(s[0].max_ns, 3000);
  EXPECT_DOUBLE_EQ(s[0].mean_ns(), 2000.0);
  // DeepSpeed averages per-call bandwidths (not total bytes / total time).
  const double alg = (4096.0 / 1000 + 4096.0 / 2000 + 4096.0 / 3000) / 3;
  EXPECT_NEAR(s[0].mean_algbw_gbps(), alg, 1e-12);
  EXPECT_NEAR(s[0].mean_busbw_gbps(), alg * 1.0, 1e-12);  // 2(n−1)/n = 1 for n = 2

  EXPECT_EQ(s[1].kind, CollectiveKind::all_reduce);
  EXPECT_EQ(s[1].msg_bytes, 1u << 20);
  EXPECT_EQ(s[1].count, 1u);
  EXPECT_NEAR(s[1].mean_algbw_gbps(), 1048576.0 / 10000, 1e-9);

  EXPECT_EQ(s[2].kind, CollectiveKind::all_gather);
  EXPECT_EQ(s[2].count, 2u);
  EXPECT_EQ(s[2].min_ns, 2000);
  EXPECT_EQ(s[2].max_ns, 4000);
  EXPECT_NEAR(s[2].mean_busbw_gbps(), (4096.0 / 4000 + 4096.0 / 2000) / 2 * 0.75, 1e-12);

  const std::string table = t.summary();
  EXPECT_NE(table.find("all_reduce"), std::string::npos) << table;
  EXPECT_NE(table.find("all_gather"), std::string::npos) << table;
  EXPECT_NE(table.find("4.00 KiB"), std::string::npos) << table;
  EXPECT_NE(table.find("1.00 MiB"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00 us"), std::string::npos) << table;  // mean of 1, 2, 3 us
  EXPECT_NE(table.find("GB/s"), std::string::npos) << table;
  // all_reduce's block comes first and holds its two sizes in ascending order.
  EXPECT_LT(table.find("4.00 KiB"), table.find("1.00 MiB"));
  EXPECT_LT(table.find("1.00 MiB"), table.find("all_gather"));

  t.reset();
  EXPECT_TRUE(t.stats().empty());
  EXPECT_TRUE(t.steps().empty());
}

// The same op and size over one host and across hosts are separate statistics:
// intra-host first, then inter-host under a heading of its own.
TEST(CommTracerAggregation, SplitsByLinkClass) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  auto across = rec(CollectiveKind::all_reduce, 4096, 4, 0, 0, 8000);
  across.link = LinkClass::inter_host;
  t.on_record(across);
  t.on_record(rec(CollectiveKind::all_reduce, 4096, 4, 0, 8000, 9000));
  t.on_record(across);
  const auto s = t.stats();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].link, LinkClass::intra_host);
  EXPECT_EQ(s[0].count, 1u);
  EXPECT_NEAR(s[0].mean_algbw_gbps(), 4096.0 / 1000, 1e-12);
  EXPECT_EQ(s[1].link, LinkClass::inter_host);
  EXPECT_EQ(s[1].count, 2u);
  EXPECT_NEAR(s[1].mean_algbw_gbps(), 4096.0 / 8000, 1e-12);
  const std::string table = t.summary();
  const auto intra = table.find("all_reduce\n"), inter = table.find("all_reduce (inter_host)\n");
  ASSERT_NE(intra, std::string::npos) << table;
  ASSERT_NE(inter, std::string::npos) << table;
  EXPECT_LT(intra, inter);
  EXPECT_EQ(parse_link(link_name(LinkClass::inter_host)), LinkClass::inter_host);
  EXPECT_THROW(parse_link("pcie"), std::invalid_argument);
}

TEST(CommTracerFilter, ProfOpsSelectsWhatIsAggregatedPrintedAndTraced) {
  ManualClock clock;
  Tracer tracer;
  tracer.set_enabled(true);
  CommTracerOptions opt;
  opt.prof_all = false;
  opt.prof_ops = {"all_reduce", "all_gather_into_tensor"};
  opt.verbose = true;
  CommTracer t(opt, &tracer, clock.fn());
  std::ostringstream verbose;
  t.set_verbose_stream(&verbose);
  EXPECT_TRUE(t.profiled(CollectiveKind::all_reduce));
  EXPECT_TRUE(t.profiled(CollectiveKind::all_gather));
  EXPECT_FALSE(t.profiled(CollectiveKind::reduce_scatter));

  t.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 0, 1000));
  t.on_record(rec(CollectiveKind::reduce_scatter, 8192, 2, 0, 1000, 2000));
  t.on_record(rec(CollectiveKind::all_gather, 8192, 2, 0, 2000, 4000));

  const auto s = t.stats();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, CollectiveKind::all_reduce);
  EXPECT_EQ(s[1].kind, CollectiveKind::all_gather);
  // Step totals count every collective, filtered or not.
  EXPECT_EQ(t.step_totals(-1).collectives, 3u);
  EXPECT_EQ(t.step_totals(-1).bytes, 4096u + 8192 + 8192);

  const std::string lines = verbose.str();
  EXPECT_NE(lines.find("comm op: all_reduce"), std::string::npos) << lines;
  EXPECT_NE(lines.find("comm op: all_gather"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("reduce_scatter"), std::string::npos) << lines;
  EXPECT_NE(lines.find("msg size: 4.00 KiB"), std::string::npos) << lines;
  // algbw of the all_gather: 8192 B / 2 us = 4.096 GB/s.
  EXPECT_NE(lines.find("algbw: 4.096 GB/s"), std::string::npos) << lines;

  const auto events = tracer.drain();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(tracer.name(events[0].name_id), "all_reduce");
  EXPECT_EQ(tracer.name(events[1].name_id), "all_gather");
  for (const auto& e : events) {
    EXPECT_EQ(e.lane, kLaneComm);
    EXPECT_EQ(e.category, Category::comm);
  }
  EXPECT_EQ(events[1].start_ns, 2000);
  EXPECT_EQ(events[1].dur_ns, 2000);
  EXPECT_EQ(events[1].bytes, 8192u);

  CommTracerOptions none;
  none.prof_all = false;  // and no prof_ops: nothing is profiled
  CommTracer t2(none, nullptr, clock.fn());
  t2.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 0, 1000));
  EXPECT_TRUE(t2.stats().empty());

  CommTracerOptions off;
  off.enabled = false;
  CommTracer t3(off, nullptr, clock.fn());
  t3.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 0, 1000));
  EXPECT_TRUE(t3.stats().empty());
  EXPECT_TRUE(t3.steps().empty());

  CommTracerOptions bad;
  bad.prof_all = false;
  bad.prof_ops = {"all_reduce", "scatter"};
  EXPECT_THROW(CommTracer(bad, nullptr, clock.fn()), std::invalid_argument);
}

TEST(CommTracerSteps, ExposedTimeIsTheComputeThreadsWaits) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  clock.now = 0;
  t.begin_step(0);
  // Two collectives queued back to back on the comm thread (FIFO).
  t.on_record(rec(CollectiveKind::all_reduce, 1000, 2, 10, 10, 110));
  t.on_record(rec(CollectiveKind::all_reduce, 2000, 2, 20, 110, 210));
  // Compute ran until 150, then waited for the second handle until 215.
  EXPECT_TRUE(t.record_wait(150, 215, 0));
  // Issued in step 0 at 250, completes after step 1 began at 300: still step 0.
  clock.now = 300;
  t.begin_step(1);
  t.on_record(rec(CollectiveKind::all_gather, 4000, 2, 250, 250, 400));
  // Step 1: one collective, fully exposed (the compute thread waited throughout).
  t.on_record(rec(CollectiveKind::reduce_scatter, 500, 2, 310, 410, 500));
  EXPECT_TRUE(t.record_wait(400, 505, 1));

  const auto s0 = t.step_totals(0);
  EXPECT_EQ(s0.collectives, 3u);
  EXPECT_EQ(s0.bytes, 7000u);
  EXPECT_EQ(s0.comm_ns, 100 + 100 + 150);  // [10,210) ∪ [250,400)
  EXPECT_EQ(s0.blocked_ns, 65);
  EXPECT_EQ(s0.exposed_ns, 60);  // [150,215) ∩ comm: the last 5 ns were the wake-up
  EXPECT_EQ(s0.waits, 1u);
  EXPECT_EQ(s0.hidden_ns(), 350 - 60);
  EXPECT_LT(s0.exposed_ns, s0.comm_ns);  // overlap

  const auto s1 = t.step_totals(1);
  EXPECT_EQ(s1.collectives, 1u);
  EXPECT_EQ(s1.comm_ns, 90);
  EXPECT_EQ(s1.blocked_ns, 105);  // the wait includes the wake-up after completion…
  EXPECT_EQ(s1.exposed_ns, 90);   // …which is not communication: exposed <= comm
  EXPECT_EQ(s1.hidden_ns(), 0);

  EXPECT_EQ(t.step_at(-5), -1);
  EXPECT_EQ(t.step_at(0), 0);
  EXPECT_EQ(t.step_at(299), 0);
  EXPECT_EQ(t.step_at(300), 1);
  EXPECT_EQ(t.step_totals(7).collectives, 0u);
  const auto all = t.steps();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].step, 0);
  EXPECT_EQ(all[1].step, 1);
}

TEST(CommTracerAggregation, SplitsByCommunicatorGroup) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  auto dp = rec(CollectiveKind::all_reduce, 4096, 2, 0, 0, 2000);
  dp.group = "dp";
  auto tied = dp;
  tied.group = "tied";
  tied.end_ns = 4000;
  t.on_record(dp);
  t.on_record(tied);
  t.on_record(dp);
  t.on_record(rec(CollectiveKind::all_reduce, 4096, 2, 0, 0, 1000));  // the world's
  const auto s = t.stats();
  ASSERT_EQ(s.size(), 3u);  // one (op, size), three groups: by group name
  EXPECT_EQ(s[0].group, "dp");
  EXPECT_EQ(s[0].count, 2u);
  EXPECT_EQ(s[1].group, "tied");
  EXPECT_EQ(s[1].total_ns, 4000);
  EXPECT_EQ(s[2].group, "world");
  EXPECT_EQ(s[2].count, 1u);
  const std::string table = t.summary();
  EXPECT_NE(table.find("all_reduce [dp]\n"), std::string::npos) << table;
  EXPECT_NE(table.find("all_reduce [tied]\n"), std::string::npos) << table;
  EXPECT_NE(table.find("all_reduce\n"), std::string::npos) << table;  // the world: no suffix
}

// Waits on pipeline transfers are waits like any other, and also the step's bubble.
TEST(CommTracerSteps, PipelineWaitsAreTheBubble) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  t.begin_step(1);
  t.on_record(rec(CollectiveKind::recv, 100, 2, 0, 0, 100));
  EXPECT_TRUE(t.record_wait(0, 40, 1, /*pipeline=*/true));
  EXPECT_TRUE(t.record_wait(30, 60, 1, /*pipeline=*/true));  // overlaps: counted once
  EXPECT_TRUE(t.record_wait(200, 300, 1));                   // a ZeRO wait: not the bubble
  const auto s = t.step_totals(1);
  EXPECT_EQ(s.bubble_ns, 60);
  EXPECT_EQ(s.blocked_ns, 160);
  EXPECT_EQ(t.step_totals(2).bubble_ns, 0);
}

TEST(CommTracerSteps, OverlappingIntervalsAreCountedOnce) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  t.begin_step(3);
  // Two communicators (say, two streams) whose collectives overlap in time.
  t.on_record(rec(CollectiveKind::all_reduce, 100, 2, 0, 0, 100));
  t.on_record(rec(CollectiveKind::all_gather, 100, 2, 0, 50, 120));
  t.on_record(rec(CollectiveKind::all_gather, 100, 2, 0, 60, 80));  // inside the union
  t.on_record(rec(CollectiveKind::broadcast, 100, 2, 0, 200, 210));
  EXPECT_EQ(t.step_totals(3).comm_ns, 120 + 10);
  EXPECT_TRUE(t.record_wait(0, 40, 3));
  EXPECT_TRUE(t.record_wait(30, 60, 3));  // overlaps the previous wait
  EXPECT_TRUE(t.record_wait(70, 70, 3));  // empty
  EXPECT_EQ(t.step_totals(3).blocked_ns, 60);
  EXPECT_EQ(t.step_totals(3).exposed_ns, 60);  // all of it during [0,120)
  EXPECT_EQ(t.step_totals(3).waits, 3u);
}

TEST(CommTracerSteps, WaitsFromOtherThreadsAreRejected) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  t.begin_step(0);
  bool accepted = true;
  std::thread other([&] { accepted = t.record_wait(0, 1000, 0); });
  other.join();
  EXPECT_FALSE(accepted);
  EXPECT_EQ(t.rejected_waits(), 1u);
  EXPECT_EQ(t.step_totals(0).blocked_ns, 0);
  EXPECT_EQ(t.step_totals(0).waits, 0u);

  // Rebinding the compute thread moves the acceptance with it.
  std::thread rebinder([&] {
    t.set_compute_thread();
    accepted = t.record_wait(0, 10, 0);
  });
  rebinder.join();
  EXPECT_TRUE(accepted);
  EXPECT_FALSE(t.record_wait(20, 30, 0));
  EXPECT_EQ(t.step_totals(0).blocked_ns, 10);
}

TEST(CommTracerSteps, TimedWaitBooksTheIntervalAlsoOnFailure) {
  ManualClock clock;
  Tracer tracer;
  tracer.set_enabled(true);
  CommTracer t({}, &tracer, clock.fn());
  clock.now = 100;
  t.begin_step(2);
  clock.now = 150;
  t.timed_wait([&] { clock.now = 190; });
  EXPECT_THROW(t.timed_wait([&] {
    clock.now = 230;
    throw std::runtime_error("collective failed");
  }),
               std::runtime_error);
  EXPECT_EQ(t.step_totals(2).blocked_ns, 40 + 40);
  EXPECT_EQ(t.step_totals(2).exposed_ns, 0);  // no collective was in flight
  EXPECT_EQ(t.step_totals(2).waits, 2u);

  const auto events = tracer.drain();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(tracer.name(events[0].name_id), "comm_wait");
  EXPECT_EQ(events[0].lane, kLaneCompute);
  EXPECT_EQ(events[0].start_ns, 150);
  EXPECT_EQ(events[0].dur_ns, 40);
  EXPECT_EQ(events[0].step, 2);
}

TEST(CommTracerThreads, RecordsFromSeveralThreadsAreAllCounted) {
  CommTracer t;
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int j = 0; j < kEach; ++j)
        t.on_record(rec(CollectiveKind(i), 64ull * (1 + j % 3), 2, j, j, j + 10));
    });
  for (int j = 0; j < 100; ++j) t.record_wait(j, j + 1, -1);
  for (auto& th : threads) th.join();
  uint64_t total = 0;
  for (const auto& s : t.stats()) total += s.count;
  EXPECT_EQ(total, uint64_t(kThreads) * kEach);
  EXPECT_EQ(t.stats().size(), size_t(kThreads) * 3);
  EXPECT_EQ(t.step_totals(-1).collectives, uint64_t(kThreads) * kEach);
  EXPECT_EQ(t.step_totals(-1).waits, 100u);
}

// The NVMe offload's reads and writes: per (kind, size), bandwidth = bytes /
// (end − start), never part of a step's communication.
TEST(CommTracerIo, BooksSwapFileTransfersApartFromCollectives) {
  ManualClock clock;
  CommTracer t({}, nullptr, clock.fn());
  t.begin_step(1);
  auto io = [](IoKind k, uint64_t bytes, int64_t start, int64_t end) {
    return IoRecord{.kind = k, .bytes = bytes, .issue_ns = start, .start_ns = start, .end_ns = end};
  };
  t.io_observer()(io(IoKind::nvme_read, 4'000'000, 0, 2'000'000));  // 2 GB/s
  t.on_io(io(IoKind::nvme_read, 4'000'000, 10, 1'000'010));         // 4 GB/s
  t.on_io(io(IoKind::nvme_write, 1'000'000, 5, 1'000'005));         // 1 GB/s
  t.on_record(rec(CollectiveKind::all_gather, 800, 2, 0, 0, 100));
  const auto s = t.io_stats();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, IoKind::nvme_read);
  EXPECT_EQ(s[0].count, 2u);
  EXPECT_EQ(s[0].total_bytes, 8'000'000u);
  EXPECT_EQ(s[0].total_ns, 3'000'000);
  EXPECT_EQ(s[0].min_ns, 1'000'000);
  EXPECT_EQ(s[0].max_ns, 2'000'000);
  EXPECT_DOUBLE_EQ(s[0].mean_gbps(), 3.0);
  EXPECT_EQ(s[1].kind, IoKind::nvme_write);
  EXPECT_DOUBLE_EQ(s[1].mean_gbps(), 1.0);
  const auto step = t.step_totals(1);
  EXPECT_EQ(step.collectives, 1u) << "I/O is not a collective";
  EXPECT_EQ(step.bytes, 800u);
  EXPECT_EQ(step.comm_ns, 100);
  ASSERT_EQ(t.stats().size(), 1u);
  const std::string summary = t.summary();
  EXPECT_NE(summary.find("nvme_read"), std::string::npos) << summary;
  EXPECT_NE(summary.find("3.000 GB/s"), std::string::npos) << summary;
  EXPECT_EQ(io_name(IoKind::nvme_write), "nvme_write");
  t.reset();
  EXPECT_TRUE(t.io_stats().empty());
}

}  // namespace
}  // namespace hybrid::profiler
