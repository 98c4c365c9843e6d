// The MPI communicator on 2 ranks, started the way hybrid-train starts it:
// make_communicator() sees mpirun's environment and initialises MPI itself, so
// its destructor must finalise MPI. Besides the shared cases: overlap of a large
// all-reduce with compute, and the one-communicator-per-process rule.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "comm_mpi_cases.h"
#include "engine/comm/factory.h"

namespace hybrid::test {
namespace {

// The all-reduce cannot finish before rank 1 joins, and rank 1 joins only
// after rank 0 has done its compute and created a flag file. So on rank 0 the
// compute provably ran while the collective was in flight: the handle is not
// ready after the compute, and the record ends after it.
TEST_F(MpiTest, ComputeOverlapsALargeAllReduce) {
  constexpr size_t kCount = size_t(1) << 20;  // 4 MiB of fp32
  std::vector<float> buf(kCount);
  for (size_t i = 0; i < kCount; ++i) buf[i] = float(rank() + 1) * float(i % 1024);

  char path[256] = {};
  if (rank() == 0) {
    const auto p = std::filesystem::temp_directory_path() /
                   ("hybrid_comm_overlap_" + std::to_string(::getpid()) + ".flag");
    std::snprintf(path, sizeof path, "%s", p.c_str());
    std::filesystem::remove(p);
  }
  comm().broadcast(path, sizeof path, 0);

  RecordLog log;
  profiler::CommTracer ct({}, nullptr, test_clock_ns);
  comm().set_observer([&, to_log = log.observer()](const CommRecord& r) {
    to_log(r);
    ct.on_record(r);
  });
  if (rank() == 0) {
    ct.begin_step(0);
    auto h = comm().all_reduce_async(buf.data(), kCount, DType::f32, ReduceOp::sum);
    // Compute with a known answer: Σ_{i<n} i·(i mod 7) in exact integer arithmetic.
    const int64_t w0 = test_clock_ns();
    uint64_t acc = 0, want = 0;
    for (int rep = 0; rep < 10; ++rep) {
      acc = 0;
      for (uint64_t i = 0; i < 1'000'000; ++i) acc += i * (i % 7);
    }
    for (uint64_t i = 0; i < 1'000'000; ++i) want += i * (i % 7);
    const int64_t w1 = test_clock_ns();
    EXPECT_EQ(acc, want);
    EXPECT_FALSE(h->ready()) << "the all-reduce finished before rank 1 joined it";
    { std::ofstream(path) << "go\n"; }
    ct.timed_wait([&] { h->wait(); });
    const auto recs = log.snapshot();
    EXPECT_EQ(recs.size(), 1u);
    if (!recs.empty()) {
      const CommRecord& r = recs[0];
      EXPECT_LE(r.issue_ns, w0);
      EXPECT_GT(r.end_ns, w1);  // still running when the compute ended
      const auto step = ct.step_totals(0);
      EXPECT_EQ(step.comm_ns, r.end_ns - r.start_ns);
      EXPECT_EQ(step.waits, 1u);
      EXPECT_GT(step.exposed_ns, 0);
      std::printf("[overlap] compute %.1f ms inside a %.1f ms all-reduce; exposed wait %.1f ms\n",
                  double(w1 - w0) / 1e6, double(r.end_ns - r.issue_ns) / 1e6,
                  double(step.exposed_ns) / 1e6);
    }
  } else {
    // Not a timing assumption: rank 1 only waits for rank 0's signal (60 s cap).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(std::filesystem::exists(path));
    comm().all_reduce(buf.data(), kCount, DType::f32, ReduceOp::sum);
  }
  int bad = 0;
  for (size_t i = 0; i < kCount; ++i)
    if (buf[i] != 3.0f * float(i % 1024)) ++bad;  // (1 + 2) · (i mod 1024), exact
  EXPECT_EQ(bad, 0);
  comm().barrier();
  if (rank() == 0) std::filesystem::remove(path);
}

TEST_F(MpiTest, OneCommunicatorPerProcess) {
  EXPECT_TRUE(comm().owns_mpi());
  try {
    engine::comm::make_communicator();
    ADD_FAILURE() << "a second MPI communicator was created";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace hybrid;
  int initialized = 1;
  MPI_Initialized(&initialized);
  int failed = initialized ? 1 : 0;  // nothing may have started MPI yet
  bool finalized_after = false;
  {
    auto c = engine::comm::make_communicator(test::test_clock_ns);
    auto* mpi = dynamic_cast<engine::comm::MpiCommunicator*>(c.get());
    if (!mpi) {
      std::fprintf(stderr, "make_communicator under mpirun gave '%s', not 'mpi'\n",
                   c->name().c_str());
      return 1;
    }
    test::Watchdog watchdog(240, mpi->rank());
    failed += test::run_all_tests_on(*mpi);
  }
  // The communicator initialised MPI, so its destructor finalised it.
  int fin = 0;
  MPI_Finalized(&fin);
  finalized_after = fin != 0;
  if (!finalized_after) {
    std::fprintf(stderr, "MPI is not finalised after the owning communicator was destroyed\n");
    ++failed;
  }
  return failed ? 1 : 0;
}
