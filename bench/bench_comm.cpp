// Collective bandwidth of our communicator, nccl-tests style: all-reduce,
// reduce-scatter and all-gather of fp32 from 4 KiB to 64 MiB (message size as
// nccl-tests defines it), reporting algbw and busbw in GB/s; and send_recv,
// each rank exchanging the message with its partner (rank ^ 1; itself when it
// has none), the pipeline's send-forward-receive-backward (busbw = algbw).
//
// Each iteration also runs the reference side by side on the same sizes: the
// bare MPI call from this thread (under mpirun), or a memcpy of the message
// (single process). vs_ref = reference time / our time, so 1.0 means the
// communicator (queue, communication thread, handle, record) costs nothing.
//
//   mpirun -np 2 build/bench/bench_comm --benchmark_filter=all_reduce
//   build/bench/bench_comm                        (single process)
//
// Under mpirun every rank runs the same benchmarks in lockstep: iteration
// times are the maximum over ranks (one small all-reduce per iteration, not
// timed), so Google Benchmark picks the same iteration counts on every rank.
// Only rank 0 reports and writes --benchmark_out.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/suite_main.h"
#include "engine/comm/factory.h"
#include "profiler/comm_tracer.h"

namespace {

using hybrid::engine::comm::Communicator;
using hybrid::engine::comm::DType;
using hybrid::engine::comm::ReduceOp;
using hybrid::profiler::CollectiveKind;

Communicator* g_comm = nullptr;

// The rank send_recv exchanges with.
int partner() {
  const int p = g_comm->rank() ^ 1;
  return p < g_comm->world_size() ? p : g_comm->rank();
}
MPI_Comm g_ref_comm = MPI_COMM_NULL;  // the reference's own communicator (MPI runs)

// total elements split over n ranks, the first total % n parts one larger.
std::vector<size_t> split_counts(size_t total, int n) {
  std::vector<size_t> c(static_cast<size_t>(n), total / size_t(n));
  for (size_t r = 0; r < total % size_t(n); ++r) ++c[r];
  return c;
}

struct Buffers {
  std::vector<float> send, recv, ref_send, ref_recv;
};

void run_ours(CollectiveKind kind, Buffers& b, const std::vector<size_t>& counts) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      g_comm->all_reduce(b.send.data(), b.send.size(), DType::f32, ReduceOp::sum);
      break;
    case CollectiveKind::reduce_scatter:
      g_comm->reduce_scatter(b.send.data(), b.recv.data(), counts, DType::f32, ReduceOp::sum);
      break;
    case CollectiveKind::all_gather:
      g_comm->all_gather(b.send.data(), b.recv.data(), counts, DType::f32);
      break;
    case CollectiveKind::send:
      g_comm->send_recv(b.send.data(), b.send.size() * sizeof(float), partner(), b.recv.data(),
                        b.recv.size() * sizeof(float), partner());
      break;
    default:
      break;
  }
}

void run_reference(CollectiveKind kind, Buffers& b, const std::vector<size_t>& counts) {
  if (g_ref_comm == MPI_COMM_NULL) {  // single process: the data movement alone
    const size_t n = kind == CollectiveKind::all_gather ? b.ref_recv.size() : b.ref_send.size();
    std::memcpy(b.ref_recv.data(), b.ref_send.data(), n * sizeof(float));
    benchmark::ClobberMemory();
    return;
  }
  // The communication thread is idle between our collectives, so calling MPI
  // from this thread keeps MPI_THREAD_SERIALIZED's one-at-a-time rule.
  std::vector<int> icounts(counts.begin(), counts.end()), displs(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + icounts[r - 1];
  switch (kind) {
    case CollectiveKind::all_reduce:
      MPI_Allreduce(MPI_IN_PLACE, b.ref_send.data(), int(b.ref_send.size()), MPI_FLOAT, MPI_SUM,
                    g_ref_comm);
      break;
    case CollectiveKind::reduce_scatter:
      MPI_Reduce_scatter(b.ref_send.data(), b.ref_recv.data(), icounts.data(), MPI_FLOAT, MPI_SUM,
                         g_ref_comm);
      break;
    case CollectiveKind::all_gather:
      MPI_Allgatherv(b.ref_send.data(), int(b.ref_send.size()), MPI_FLOAT, b.ref_recv.data(),
                     icounts.data(), displs.data(), MPI_FLOAT, g_ref_comm);
      break;
    case CollectiveKind::send:
      MPI_Sendrecv(b.ref_send.data(), int(b.ref_send.size()), MPI_FLOAT, partner(), 0,
                   b.ref_recv.data(), int(b.ref_recv.size()), MPI_FLOAT, partner(), 0, g_ref_comm,
                   MPI_STATUS_IGNORE);
      break;
    default:
      break;
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_collective(benchmark::State& state, CollectiveKind kind) {
  const size_t bytes = size_t(state.range(0));
  const size_t total = bytes / sizeof(float);
  const int n = g_comm->world_size();
  const auto counts = split_counts(total, n);
  const size_t mine = counts[size_t(g_comm->rank())];
  // Zeros: repeated sums stay finite (no inf or denormal slow paths).
  Buffers b;
  switch (kind) {
    case CollectiveKind::all_reduce:
      b.send.assign(total, 0.0f);
      break;
    case CollectiveKind::reduce_scatter:
      b.send.assign(total, 0.0f);
      b.recv.assign(mine, 0.0f);
      break;
    case CollectiveKind::send:  // send_recv: the whole message each way
      b.send.assign(total, 0.0f);
      b.recv.assign(total, 0.0f);
      break;
    default:
      b.send.assign(mine, 0.0f);
      b.recv.assign(total, 0.0f);
      break;
  }
  b.ref_send = b.send;
  b.ref_recv = b.recv;
  if (g_ref_comm == MPI_COMM_NULL && b.ref_recv.size() < b.ref_send.size())
    b.ref_recv.resize(b.ref_send.size());
  if (g_ref_comm == MPI_COMM_NULL && b.ref_send.size() < b.ref_recv.size())
    b.ref_send.resize(b.ref_recv.size());

  double ours_s = 0, ref_s = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    run_ours(kind, b, counts);
    const double ours = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    run_reference(kind, b, counts);
    const double ref = seconds_since(t1);
    // The slowest rank's times, identical everywhere.
    float t[2] = {float(ours), float(ref)};
    if (n > 1) g_comm->all_reduce(t, 2, DType::f32, ReduceOp::max);
    state.SetIterationTime(double(t[0]));
    ours_s += double(t[0]);
    ref_s += double(t[1]);
  }
  const double iters = double(state.iterations());
  const double factor = hybrid::profiler::bus_factor(kind, n);
  const double algbw = ours_s > 0 ? double(bytes) * iters / ours_s / 1e9 : 0.0;
  const double ref_algbw = ref_s > 0 ? double(bytes) * iters / ref_s / 1e9 : 0.0;
  state.counters["bytes"] = double(bytes);
  state.counters["ranks"] = n;
  state.counters["algbw_GBps"] = algbw;
  state.counters["busbw_GBps"] = algbw * factor;
  state.counters["ref_algbw_GBps"] = ref_algbw;
  state.counters["ref_busbw_GBps"] = ref_algbw * factor;
  state.counters["vs_ref"] = ours_s > 0 ? ref_s / ours_s : 0.0;
  state.SetLabel(g_ref_comm == MPI_COMM_NULL ? "ref=memcpy" : "ref=MPI on caller thread");
}

void register_benchmarks() {
  for (CollectiveKind kind : {CollectiveKind::all_reduce, CollectiveKind::reduce_scatter,
                              CollectiveKind::all_gather, CollectiveKind::send}) {
    const std::string name = kind == CollectiveKind::send
                                 ? "send_recv"
                                 : std::string(hybrid::profiler::collective_name(kind));
    benchmark::RegisterBenchmark(name.c_str(), BM_collective, kind)
        ->RangeMultiplier(4)
        ->Range(4 << 10, 64 << 20)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto comm = hybrid::engine::comm::make_communicator();
  g_comm = comm.get();
  const int rank = comm->rank(), world = comm->world_size();

  // Arguments every rank must agree on, or that only rank 0 may act on.
  std::vector<char*> args;
  bool dropped_interleaving = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (world > 1 && a.starts_with("--benchmark_enable_random_interleaving")) {
      // Its shuffle is seeded per process: ranks would run different benchmarks.
      dropped_interleaving = true;
      continue;
    }
    if (rank != 0 &&
        (a.starts_with("--benchmark_out=") || a.starts_with("--benchmark_out_format=")))
      continue;
    args.push_back(argv[i]);
  }
  if (dropped_interleaving && rank == 0)
    std::fprintf(stderr,
                 "bench_comm: random interleaving is off under mpirun (ranks must agree)\n");
  const int nargs = int(args.size());
  args.push_back(nullptr);

  if (comm->name() == "mpi") MPI_Comm_dup(MPI_COMM_WORLD, &g_ref_comm);
  register_benchmarks();
  // Ranks other than 0 run every benchmark but print nothing.
  hybrid::bench::SuiteSteps steps;
  steps.report = rank == 0;
  const int rc = hybrid::bench::run_suite(nargs, args.data(), steps);
  if (g_ref_comm != MPI_COMM_NULL) MPI_Comm_free(&g_ref_comm);
  comm.reset();  // finalises MPI if it started it
  return rc;
}
