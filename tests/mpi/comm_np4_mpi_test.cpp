// The MPI communicator on 4 ranks (oversubscribed on small machines: messages
// stay small), inside a program that initialised MPI itself: the communicator
// must then leave MPI initialised when destroyed, and a new one can follow.
#include "comm_mpi_cases.h"
#include "engine/comm/factory.h"

namespace hybrid::test {
namespace {

TEST_F(MpiTest, DoesNotOwnAnMpiItDidNotInitialise) { EXPECT_FALSE(comm().owns_mpi()); }

TEST_F(MpiTest, AllReduceOfFourDistinctContributions) {
  // With 4 ranks every reduction mixes 4 different inputs: 2^r per rank sums
  // to 15 only if each rank's value arrives exactly once.
  for (DType dt : kDtypes) {
    auto buf = make_buffer(dt, 33, [&](size_t i) { return double(1 << rank()) * double(i % 3); });
    comm().all_reduce(buf.data(), 33, dt, ReduceOp::sum);
    int bad = 0;
    for (size_t i = 0; i < 33; ++i)
      if (element(buf.data(), dt, i) != float(double((1 << world()) - 1) * double(i % 3))) ++bad;
    EXPECT_EQ(bad, 0) << kernels::dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace hybrid;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int failed = 0;
  auto fail = [&](const char* what) {
    std::fprintf(stderr, "%s\n", what);
    ++failed;
  };
  {
    // A first communicator comes and goes: MPI stays up for the next one.
    auto first = engine::comm::make_communicator(test::test_clock_ns);
    if (first->name() != "mpi") fail("make_communicator with MPI initialised did not give 'mpi'");
    float x = 1.0f;
    first->all_reduce(&x, 1, kernels::DType::f32, engine::comm::ReduceOp::sum);
    if (x != float(first->world_size())) fail("first communicator: wrong all-reduce");
  }
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) {
    fail("a communicator that did not initialise MPI finalised it");
    return 1;
  }
  {
    engine::comm::MpiCommunicator c(test::test_clock_ns);
    test::Watchdog watchdog(300, c.rank());
    failed += test::run_all_tests_on(c);
  }
  MPI_Finalized(&fin);
  if (fin)
    fail("a communicator that did not initialise MPI finalised it");
  else
    MPI_Finalize();
  return failed ? 1 : 0;
}
