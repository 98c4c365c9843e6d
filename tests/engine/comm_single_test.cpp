// The single-process communicator (world size 1), launcher detection and
// make_communicator(), and the fp16/bf16 reduction functions the MPI
// communicator installs as MPI_Ops (called directly here: they need no MPI).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/comm/factory.h"
#include "engine/comm/mpi_types.h"

namespace hybrid::engine::comm {
namespace {

using kernels::bf16_t;
using kernels::f16_t;

// A clock that ticks by one per reading, so each stamp shows where it was taken.
struct TickClock {
  int64_t next = 1000;
  std::function<int64_t()> fn() {
    return [this] { return next++; };
  }
};

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + 31 * i);
  return v;
}

TEST(SingleCommunicator, Identity) {
  auto c = make_single_communicator();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->world_size(), 1);
  EXPECT_EQ(c->name(), "single");
}

TEST(SingleCommunicator, AllReduceLeavesDataAndReportsBytes) {
  TickClock clock;
  auto c = make_single_communicator(clock.fn());
  std::vector<CommRecord> recs;
  c->set_observer([&](const CommRecord& r) { recs.push_back(r); });
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      const size_t count = 37;
      auto buf = pattern_bytes(count * kernels::dtype_size(dt), 7);
      const auto before = buf;
      auto h = c->all_reduce_async(buf.data(), count, dt, op);
      EXPECT_TRUE(h->ready());  // complete at once
      h->wait();
      EXPECT_EQ(buf, before) << kernels::dtype_name(dt);
    }
  }
  ASSERT_EQ(recs.size(), 9u);
  EXPECT_EQ(recs[0].kind, CollectiveKind::all_reduce);
  EXPECT_EQ(recs[0].bytes, 37u * 4);
  EXPECT_EQ(recs[0].dtype_bytes, 4);
  EXPECT_EQ(recs[3].bytes, 37u * 2);
  EXPECT_EQ(recs[3].dtype_bytes, 2);
  EXPECT_EQ(recs[0].world_size, 1);
  // Stamps come from the given clock: issue == start (no queue), end after.
  EXPECT_EQ(recs[0].issue_ns, 1000);
  EXPECT_EQ(recs[0].start_ns, 1000);
  EXPECT_EQ(recs[0].end_ns, 1001);
  EXPECT_EQ(recs[1].issue_ns, 1002);
}

TEST(SingleCommunicator, ReduceScatterAndAllGatherCopy) {
  auto c = make_single_communicator();
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const size_t es = kernels::dtype_size(dt), n = 29;
    const auto send = pattern_bytes(n * es, 3);
    std::vector<uint8_t> recv(n * es, 0);
    c->reduce_scatter(send.data(), recv.data(), {n}, dt, ReduceOp::sum);
    EXPECT_EQ(recv, send);
    std::vector<uint8_t> gathered(n * es, 0);
    c->all_gather(send.data(), gathered.data(), {n}, dt);
    EXPECT_EQ(gathered, send);
    // In place: send is the (only) slot of recv.
    auto buf = send;
    c->all_gather(buf.data(), buf.data(), {n}, dt);
    c->reduce_scatter(buf.data(), buf.data(), {n}, dt, ReduceOp::max);
    EXPECT_EQ(buf, send);
  }
}

TEST(SingleCommunicator, CountersAndRecordBytesFollowNcclTests) {
  auto c = make_single_communicator();
  std::vector<CommRecord> recs;
  c->set_observer([&](const CommRecord& r) { recs.push_back(r); });
  std::vector<float> a(100), b(100);
  c->all_reduce(a.data(), 100, DType::f32, ReduceOp::sum);
  c->reduce_scatter(a.data(), b.data(), {60}, DType::bf16, ReduceOp::sum);
  c->all_gather(a.data(), b.data(), {50}, DType::f16);
  c->broadcast(a.data(), 123, 0);
  c->barrier();
  c->barrier();
  const auto k = c->counters();
  EXPECT_EQ(k.calls[int(CollectiveKind::all_reduce)], 1u);
  EXPECT_EQ(k.bytes[int(CollectiveKind::all_reduce)], 400u);
  EXPECT_EQ(k.bytes[int(CollectiveKind::reduce_scatter)], 120u);
  EXPECT_EQ(k.bytes[int(CollectiveKind::all_gather)], 100u);
  EXPECT_EQ(k.bytes[int(CollectiveKind::broadcast)], 123u);
  EXPECT_EQ(k.calls[int(CollectiveKind::barrier)], 2u);
  EXPECT_EQ(k.bytes[int(CollectiveKind::barrier)], 0u);
  EXPECT_EQ(k.total_bytes(), 400u + 120 + 100 + 123);
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_EQ(recs[3].kind, CollectiveKind::broadcast);
  EXPECT_EQ(recs[3].bytes, 123u);
  c->reset_counters();
  EXPECT_EQ(c->counters().total_bytes(), 0u);
  EXPECT_EQ(c->counters().calls[int(CollectiveKind::barrier)], 0u);
}

TEST(SingleCommunicator, ZeroCountsNeedNoBuffers) {
  auto c = make_single_communicator();
  c->all_reduce(nullptr, 0, DType::f16, ReduceOp::sum);
  c->reduce_scatter(nullptr, nullptr, {0}, DType::f32, ReduceOp::sum);
  c->all_gather(nullptr, nullptr, {0}, DType::bf16);
  c->broadcast(nullptr, 0, 0);
  EXPECT_EQ(c->counters().calls[int(CollectiveKind::all_gather)], 1u);
  EXPECT_EQ(c->counters().total_bytes(), 0u);
}

TEST(SingleCommunicator, RejectsBadArgumentsNamingThem) {
  auto c = make_single_communicator();
  std::vector<float> a(8), b(8);
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no exception)";
  };
  EXPECT_NE(message([&] {
              c->all_gather(a.data(), b.data(), {4, 4}, DType::f32);
            }).find("all_gather: counts has 2 entries"),
            std::string::npos);
  EXPECT_NE(message([&] { c->broadcast(a.data(), 4, 1); }).find("broadcast: root 1"),
            std::string::npos);
  EXPECT_NE(message([&] {
              c->all_reduce(nullptr, 8, DType::f32, ReduceOp::sum);
            }).find("all_reduce: buf is null"),
            std::string::npos);
  EXPECT_NE(message([&] {
              c->reduce_scatter(a.data(), nullptr, {8}, DType::f32, ReduceOp::sum);
            }).find("reduce_scatter: recv is null"),
            std::string::npos);
  EXPECT_EQ(c->counters().total_bytes(), 0u);  // nothing ran
}

TEST(SingleCommunicator, ObserverFailureIsRethrownByWait) {
  auto c = make_single_communicator();
  c->set_observer([](const CommRecord&) { throw std::runtime_error("observer broke"); });
  std::vector<float> a(4);
  auto h = c->all_reduce_async(a.data(), 4, DType::f32, ReduceOp::sum);
  EXPECT_TRUE(h->ready());
  EXPECT_THROW(h->wait(), std::runtime_error);
  EXPECT_THROW(h->wait(), std::runtime_error);  // every wait reports it
}

// Sets or clears environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv() {
    for (const char* v : kVars) {
      const char* old = std::getenv(v);
      saved_[v] = old ? std::optional<std::string>(old) : std::nullopt;
      unsetenv(v);
    }
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved_) {
      if (v)
        setenv(k.c_str(), v->c_str(), 1);
      else
        unsetenv(k.c_str());
    }
  }
  void set(const char* k, const char* v) { setenv(k, v, 1); }

  static constexpr const char* kVars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                          "MV2_COMM_WORLD_SIZE",  "SLURM_STEP_ID",
                                          "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"};

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(LaunchDetection, ReadsTheLaunchersEnvironment) {
  {
    ScopedEnv env;
    EXPECT_EQ(launcher_world_size(), 1);
    EXPECT_FALSE(launched_with_multiple_ranks());
    // Not launched, MPI not initialised: the single-process communicator.
    EXPECT_EQ(make_communicator()->name(), "single");
  }
  {
    ScopedEnv env;
    env.set("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_EQ(launcher_world_size(), 4);
    EXPECT_TRUE(launched_with_multiple_ranks());
  }
  {
    ScopedEnv env;
    env.set("OMPI_COMM_WORLD_SIZE", "1");  // mpirun -np 1
    EXPECT_FALSE(launched_with_multiple_ranks());
  }
  {
    ScopedEnv env;
    env.set("PMI_SIZE", "2");
    EXPECT_TRUE(launched_with_multiple_ranks());
  }
  {
    ScopedEnv env;
    env.set("MV2_COMM_WORLD_SIZE", "3");
    EXPECT_EQ(launcher_world_size(), 3);
  }
  {
    // A batch script's allocation is not a multi-rank launch; an srun step is.
    ScopedEnv env;
    env.set("SLURM_NTASKS", "8");
    EXPECT_FALSE(launched_with_multiple_ranks());
    env.set("SLURM_STEP_ID", "0");
    EXPECT_EQ(launcher_world_size(), 8);
    env.set("SLURM_STEP_NUM_TASKS", "2");
    EXPECT_EQ(launcher_world_size(), 2);
  }
  {
    ScopedEnv env;
    env.set("OMPI_COMM_WORLD_SIZE", "four");
    try {
      launched_with_multiple_ranks();
      ADD_FAILURE() << "expected an error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("OMPI_COMM_WORLD_SIZE='four'"), std::string::npos)
          << e.what();
    }
  }
}

// The fp16/bf16 MPI_Op functions: inout[i] = round(in[i] ∘ inout[i]) computed
// in fp32, against a scalar reference, over lengths that exercise both the
// 8-wide F16C body and the tail. Results must match bit for bit.
template <class T>
void check_half_op(DType dt, ReduceOp op) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  auto op_name = [&] { return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "min"; };
  MPI_User_function* fn = half_reduce_function(dt, op);
  for (int n : {0, 1, 7, 8, 9, 16, 37, 1000}) {
    std::vector<T> in(static_cast<size_t>(n)), inout(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      // Mixed scales, so sums round; a few extremes: overflow to inf, subnormals, ±0.
      const float scale = std::ldexp(1.0f, int(rng() % 24) - 12);
      in[size_t(i)] = kernels::store<T>(dist(rng) * scale);
      inout[size_t(i)] = kernels::store<T>(dist(rng) * scale);
    }
    if (n >= 9) {
      in[3] = kernels::store<T>(60000.0f);
      inout[3] = kernels::store<T>(60000.0f);
      in[4] = kernels::store<T>(std::ldexp(1.0f, -20));
      inout[4] = kernels::store<T>(std::ldexp(1.0f, -23));
      in[5] = kernels::store<T>(-0.0f);
      inout[5] = kernels::store<T>(0.0f);
    }
    std::vector<T> expect(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const float x = kernels::load(in[size_t(i)]), y = kernels::load(inout[size_t(i)]);
      const float r = op == ReduceOp::sum   ? x + y
                      : op == ReduceOp::max ? (x > y ? x : y)
                                            : (x < y ? x : y);
      expect[size_t(i)] = kernels::store<T>(r);
    }
    int len = n;
    MPI_Datatype unused = MPI_DATATYPE_NULL;
    fn(in.data(), inout.data(), &len, &unused);
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(inout[size_t(i)].bits, expect[size_t(i)].bits)
          << kernels::dtype_name(dt) << " " << op_name() << " n=" << n << " i=" << i;
  }
}

TEST(MpiHalfOps, MatchScalarFp32ReferenceBitForBit) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    check_half_op<f16_t>(DType::f16, op);
    check_half_op<bf16_t>(DType::bf16, op);
  }
  // 60000 + 60000 overflows fp16 to +inf (what a loss scaler must see).
  f16_t a = kernels::float_to_f16(60000.0f), b = a;
  int len = 1;
  MPI_Datatype unused = MPI_DATATYPE_NULL;
  half_reduce_function(DType::f16, ReduceOp::sum)(&a, &b, &len, &unused);
  EXPECT_TRUE(std::isinf(kernels::f16_to_float(b)));
  EXPECT_THROW(half_reduce_function(DType::f32, ReduceOp::sum), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::engine::comm
