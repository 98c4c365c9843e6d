// What every multi-process GoogleTest binary here shares: the communicator the
// tests use, a fixture that makes all ranks agree on each test's outcome, a
// main() body that agrees on the final verdict, a watchdog that turns a hang
// into a failure, and helpers for typed buffers.
//
// Rules for tests built on this: every rank issues the same collectives in the
// same order whatever fails, so check with EXPECT_* (never ASSERT_* before the
// test's last collective), and only rank 0 prints (other ranks print their
// failed assertions only, prefixed with their rank).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/comm/mpi_communicator.h"
#include "kernels/dtype.h"

namespace hybrid::test {

using engine::comm::Communicator;
using engine::comm::DType;
using engine::comm::MpiCommunicator;
using engine::comm::ReduceOp;
using profiler::CollectiveKind;
using profiler::CommRecord;

// The one clock of communicator and tracers in these tests.
inline int64_t test_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline MpiCommunicator* g_comm = nullptr;

inline MpiCommunicator& comm() { return *g_comm; }
inline int rank() { return g_comm->rank(); }
inline int world() { return g_comm->world_size(); }

// After each test: all ranks learn which ranks failed it, and rank 0 (the one
// that prints) fails the test too, naming them.
class MpiTest : public ::testing::Test {
 protected:
  void TearDown() override {
    comm().set_observer({});
    comm().set_chunk_elements(size_t(INT_MAX));
    std::vector<float> failed(static_cast<size_t>(world()), 0.0f);
    failed[size_t(rank())] = HasFailure() ? 1.0f : 0.0f;
    comm().all_reduce(failed.data(), failed.size(), DType::f32, ReduceOp::sum);
    if (rank() == 0)
      for (int r = 1; r < world(); ++r)
        if (failed[size_t(r)] != 0.0f) ADD_FAILURE() << "this test failed on rank " << r;
  }
};

// Prints failed assertions of a rank other than 0 (its normal output is off).
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
  }

 private:
  int rank_;
};

// Ends the process when the tests take longer than `seconds` (a rank stuck in
// a collective): mpirun then stops the other ranks and reports the failure.
class Watchdog {
 public:
  explicit Watchdog(int seconds, int rank) {
    thread_ = std::thread([this, seconds, rank] {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
        std::fprintf(stderr, "[rank %d] watchdog: tests still running after %d s; aborting\n", rank,
                     seconds);
        std::fflush(stderr);
        std::_Exit(124);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Runs every test with `c` as the communicator; returns the number of ranks on
// which something failed (the same on every rank).
inline int run_all_tests_on(MpiCommunicator& c) {
  g_comm = &c;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (c.rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(c.rank()));
  }
  const int rc = RUN_ALL_TESTS();
  float failed = rc != 0 ? 1.0f : 0.0f;
  c.all_reduce(&failed, 1, DType::f32, ReduceOp::sum);
  if (c.rank() == 0)
    std::printf("[mpi] %d rank(s) of %d reported failures\n", int(failed), c.world_size());
  g_comm = nullptr;
  return int(failed);
}

// The main() of a binary whose tests all run on one MpiCommunicator made
// here: a watchdog of `watchdog_s` seconds, exit status 1 when a rank failed.
inline int mpi_test_main(int argc, char** argv, int watchdog_s) {
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  {
    MpiCommunicator c(test_clock_ns);
    Watchdog watchdog(watchdog_s, c.rank());
    failed = run_all_tests_on(c);
  }
  return failed ? 1 : 0;
}

// ---- typed buffers -------------------------------------------------------

// n elements of dt holding value(i) rounded to dt.
template <class Fn>
std::vector<std::byte> make_buffer(DType dt, size_t n, Fn&& value) {
  std::vector<std::byte> b(n * kernels::dtype_size(dt));
  kernels::dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    auto* p = reinterpret_cast<T*>(b.data());
    for (size_t i = 0; i < n; ++i) p[i] = kernels::store<T>(float(value(i)));
  });
  return b;
}

inline float element(const void* buf, DType dt, size_t i) {
  return kernels::dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    return kernels::load(static_cast<const T*>(buf)[i]);
  });
}

// Values in [-4, 4] in steps of 1/4: every sum of up to 64 of them, and every
// partial sum, is exact in fp32, fp16 and bf16 (≤ 8 significant bits), so the
// reduction order of MPI cannot change a result.
inline double test_value(int rank, size_t i, int salt = 0) {
  return double(int((i * 7 + size_t(rank) * 13 + size_t(salt) * 5) % 33) - 16) * 0.25;
}

inline double reduce_reference(ReduceOp op, int world, size_t i, int salt = 0) {
  double acc = test_value(0, i, salt);
  for (int r = 1; r < world; ++r) {
    const double v = test_value(r, i, salt);
    acc = op == ReduceOp::sum ? acc + v : op == ReduceOp::max ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

inline const char* op_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "min";
}

// Thread-safe collector for the observer (it runs on the communication thread).
struct RecordLog {
  std::mutex mutex;
  std::vector<CommRecord> records;
  Communicator::Observer observer() {
    return [this](const CommRecord& r) {
      std::lock_guard lock(mutex);
      records.push_back(r);
    };
  }
  std::vector<CommRecord> snapshot() {
    std::lock_guard lock(mutex);
    return records;
  }
};

}  // namespace hybrid::test
