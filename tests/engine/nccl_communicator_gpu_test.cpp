// The NCCL communicator on one GPU (world size 1, no MPI launcher): stream
// ordering against the compute stream in both directions, the equal and the
// grouped (uneven-count) paths, broadcast, barrier, argument checks, and
// CommRecords with event-measured times, and a split group (ncclCommSplit)
// sharing the streams. Multi-GPU correctness needs a multi-GPU machine
// (scripts/gpu-check.sh runs this file on one H200; the 2-rank tp and pp runs
// are tests/engine/parallel_gpu_test.cpp).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/comm/nccl_communicator.h"
#include "kernels/registry.h"

#if HYBRID_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace hybrid::engine::comm {
namespace {

TEST(NcclCommunicator, CpuBuildsRefuseClearly) {
  if (nccl_available_in_build()) GTEST_SKIP() << "CUDA build";
  try {
    make_nccl_communicator({});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA support"), std::string::npos) << e.what();
  }
}

#if HYBRID_HAVE_CUDA
class NcclSingleGpu : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    try {
      backend_ = kernels::make_backend("cuda", 0).backend;
    } catch (const std::exception& e) {
      GTEST_SKIP() << "no CUDA device: " << e.what();
    }
    cuda_ = dynamic_cast<kernels::CudaBackend*>(backend_.get());
    NcclOptions o;
    o.device = cuda_->device();
    o.compute_stream = cuda_->compute_stream();
    o.comm_stream = cuda_->comm_stream();
    o.always_grouped = GetParam();
    comm_ = make_nccl_communicator(o);
    comm_->set_observer([this](const CommRecord& r) { records_.push_back(r); });
  }
  void* upload(const std::vector<float>& v) {
    void* p = backend_->allocate(v.size() * 4);
    backend_->copy_from_host(p, v.data(), v.size() * 4);
    return p;
  }
  std::vector<float> download(void* p, size_t n) {
    std::vector<float> v(n);
    backend_->copy_to_host(v.data(), p, n * 4);
    return v;
  }
  std::unique_ptr<kernels::Backend> backend_;
  kernels::CudaBackend* cuda_ = nullptr;
  std::unique_ptr<Communicator> comm_;
  std::vector<CommRecord> records_;
};

TEST_P(NcclSingleGpu, CollectivesAreOrderedAgainstTheComputeStream) {
  ASSERT_EQ(comm_->world_size(), 1);
  ASSERT_EQ(comm_->rank(), 0);
  EXPECT_EQ(comm_->name(), "nccl");
  const size_t n = size_t(1) << 20;
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  void* send = upload(v);
  void* recv = upload(std::vector<float>(n, -1.0f));
  void* acc = upload(std::vector<float>(n, 0.0f));
  // compute writes send → collective reads it → compute reads recv.
  backend_->scale(kernels::DType::f32, send, n, 2.0f);
  comm_->reduce_scatter_async(send, recv, {n}, kernels::DType::f32, ReduceOp::sum)->wait();
  backend_->add(kernels::DType::f32, acc, kernels::DType::f32, recv, n, 1.0f);
  auto got = download(acc, n);
  for (size_t i = 0; i < n; i += 4097) ASSERT_EQ(got[i], 2.0f * float(i)) << i;

  // all_gather into a fresh buffer; in-place all_reduce max; broadcast.
  void* gathered = upload(std::vector<float>(n, 0.0f));
  comm_->all_gather(recv, gathered, {n}, kernels::DType::f32);
  EXPECT_EQ(download(gathered, n), download(recv, n));
  comm_->all_reduce(gathered, n, kernels::DType::f32, ReduceOp::max);
  comm_->broadcast(gathered, n * 4, 0);
  got = download(gathered, n);
  EXPECT_EQ(got[n - 1], 2.0f * float(n - 1));
  comm_->barrier();  // host-blocking: every record before it is delivered

  ASSERT_EQ(records_.size(), 5u);
  EXPECT_EQ(records_[0].kind, CollectiveKind::reduce_scatter);
  EXPECT_EQ(records_[0].bytes, n * 4);
  EXPECT_EQ(records_[1].kind, CollectiveKind::all_gather);
  EXPECT_EQ(records_[4].kind, CollectiveKind::barrier);
  for (size_t i = 0; i < records_.size(); ++i) {
    EXPECT_LE(records_[i].issue_ns, records_[i].start_ns) << i;
    EXPECT_LE(records_[i].start_ns, records_[i].end_ns) << i;
    if (i) {
      EXPECT_LE(records_[i - 1].end_ns, records_[i].start_ns + 1000) << i;  // one stream: in order
    }
  }
  EXPECT_EQ(comm_->counters().calls[int(CollectiveKind::reduce_scatter)], 1u);
  for (void* p : {send, recv, acc, gathered}) backend_->deallocate(p, n * 4);
}

TEST_P(NcclSingleGpu, RejectsBadArguments) {
  EXPECT_THROW(
      comm_->reduce_scatter_async(nullptr, nullptr, {1, 2}, kernels::DType::f32, ReduceOp::sum),
      std::invalid_argument);
  EXPECT_THROW(comm_->broadcast_async(nullptr, 4, 0), std::invalid_argument);
  EXPECT_THROW(comm_->broadcast_async(nullptr, 0, 1), std::invalid_argument);
}

// One GPU: its only peer is itself. send_recv to itself (ncclSend and ncclRecv
// in one group) copies after the compute stream's write and before its read;
// a lone send to itself is refused, as is a peer outside the world.
TEST_P(NcclSingleGpu, SendRecvToItselfCopiesInStreamOrder) {
  const size_t n = (size_t(1) << 20) + 3;
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.0f);
  void* src = upload(v);
  void* dst = upload(std::vector<float>(n, -1.0f));
  backend_->scale(kernels::DType::f32, src, n, 2.0f);
  comm_->send_recv(src, n * 4, 0, dst, n * 4, 0);
  backend_->scale(kernels::DType::f32, dst, n, 0.5f);
  const auto got = download(dst, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += got[i] != v[i];
  EXPECT_EQ(bad, 0u);
  comm_->barrier();
  ASSERT_EQ(records_.size(), 3u);
  EXPECT_EQ(records_[0].kind, CollectiveKind::send);
  EXPECT_EQ(records_[1].kind, CollectiveKind::recv);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(records_[size_t(i)].bytes, n * 4);
    EXPECT_EQ(records_[size_t(i)].peer, 0);
  }
  EXPECT_THROW(comm_->send_async(src, 4, 0), std::logic_error);
  EXPECT_THROW(comm_->recv_async(dst, 4, 1), std::invalid_argument);
  for (void* p : {src, dst}) backend_->deallocate(p, n * 4);
}

// A group (ncclCommSplit) of the one GPU: rank 0 of 1, on the parent's
// streams, so its collectives and the parent's run in issue order against the
// compute stream; its records go to its own observer and counters, stamped
// with its label; a negative colour is refused as the MPI split refuses it.
TEST_P(NcclSingleGpu, SplitGroupSharesTheStreamsAndTracesUnderItsLabel) {
  EXPECT_THROW(comm_->split(-1, 0), std::invalid_argument);
  auto group = comm_->split(7, 3);
  ASSERT_EQ(group->world_size(), 1);
  ASSERT_EQ(group->rank(), 0);
  EXPECT_EQ(group->name(), "nccl");
  std::vector<CommRecord> group_records;
  group->set_group_label("tp");
  group->set_observer([&](const CommRecord& r) { group_records.push_back(r); });

  const size_t n = (size_t(1) << 18) + 5;
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.0f);
  void* a = upload(v);
  void* b = upload(std::vector<float>(n, 0.0f));
  backend_->scale(kernels::DType::f32, a, n, 2.0f);
  group->all_reduce(a, n, kernels::DType::f32, ReduceOp::sum);  // world 1: unchanged
  comm_->send_recv(a, n * 4, 0, b, n * 4, 0);                   // the parent, after it
  group->send_recv(b, n * 4, 0, a, n * 4, 0);                   // and the group again
  backend_->scale(kernels::DType::f32, a, n, 0.5f);
  const auto got = download(a, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += got[i] != v[i];
  EXPECT_EQ(bad, 0u);
  group->barrier();
  comm_->barrier();
  ASSERT_EQ(group_records.size(), 4u);  // all_reduce, send, recv, barrier
  EXPECT_EQ(group_records[0].kind, CollectiveKind::all_reduce);
  for (const CommRecord& r : group_records) {
    EXPECT_EQ(r.group, "tp");
    EXPECT_EQ(r.world_size, r.peer >= 0 ? 2 : 1);
  }
  EXPECT_EQ(records_.size(), 3u);  // send, recv, barrier
  for (const CommRecord& r : records_) EXPECT_EQ(r.group, "world");
  EXPECT_LE(group_records[0].end_ns, records_[0].start_ns + 1000);  // one stream: in order
  EXPECT_EQ(group->counters().calls[int(CollectiveKind::all_reduce)], 1u);
  EXPECT_EQ(comm_->counters().calls[int(CollectiveKind::all_reduce)], 0u);
  EXPECT_THROW(group->send_async(a, 4, 1), std::invalid_argument);  // peers are group ranks
  for (void* p : {a, b}) backend_->deallocate(p, n * 4);
  group.reset();  // before its parent
}

INSTANTIATE_TEST_SUITE_P(Paths, NcclSingleGpu, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "grouped" : "equal"; });
#endif

}  // namespace
}  // namespace hybrid::engine::comm
