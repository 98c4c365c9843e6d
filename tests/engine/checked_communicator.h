// A communicator that checks where the buffers it is given live, around a real
// one: the engine's device communicator must only see device memory (NCCL
// cannot read host memory) and its host communicator only host memory. Its
// groups (split()) check alike and count into the same tallies.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::test {

class CheckedCommunicator final : public engine::comm::Communicator {
 public:
  using Communicator = engine::comm::Communicator;
  using HandlePtr = engine::comm::HandlePtr;
  using ReduceOp = engine::comm::ReduceOp;
  // in_place(p, bytes): whether [p, p + bytes) is memory this communicator may touch.
  CheckedCommunicator(Communicator& inner, std::string label,
                      std::function<bool(const void*, size_t)> in_place)
      : inner_(inner),
        log_(std::make_shared<Log>()),
        label_(std::move(label)),
        ok_(std::move(in_place)) {}

  std::unique_ptr<Communicator> split(int color, int key) override {
    auto group = std::unique_ptr<CheckedCommunicator>(
        new CheckedCommunicator(inner_.split(color, key), log_, label_, ok_));
    ++log_->splits;
    return group;
  }

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  std::string name() const override { return inner_.name(); }

  HandlePtr all_reduce_async(void* buf, size_t count, kernels::DType dt, ReduceOp op) override {
    check("all_reduce", buf, count * kernels::dtype_size(dt));
    ++log_->calls[int(profiler::CollectiveKind::all_reduce)];
    return inner_.all_reduce_async(buf, count, dt, op);
  }
  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 kernels::DType dt, ReduceOp op) override {
    check("reduce_scatter send", send, total(counts) * kernels::dtype_size(dt));
    check("reduce_scatter recv", recv, counts[size_t(rank())] * kernels::dtype_size(dt));
    ++log_->calls[int(profiler::CollectiveKind::reduce_scatter)];
    return inner_.reduce_scatter_async(send, recv, counts, dt, op);
  }
  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             kernels::DType dt) override {
    check("all_gather send", send, counts[size_t(rank())] * kernels::dtype_size(dt));
    check("all_gather recv", recv, total(counts) * kernels::dtype_size(dt));
    ++log_->calls[int(profiler::CollectiveKind::all_gather)];
    return inner_.all_gather_async(send, recv, counts, dt);
  }
  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override {
    check("broadcast", buf, bytes);
    ++log_->calls[int(profiler::CollectiveKind::broadcast)];
    return inner_.broadcast_async(buf, bytes, root);
  }
  HandlePtr barrier_async() override {
    ++log_->calls[int(profiler::CollectiveKind::barrier)];
    return inner_.barrier_async();
  }
  HandlePtr all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) override {
    check("all_to_all send", send, bytes_per_rank * size_t(world_size()));
    check("all_to_all recv", recv, bytes_per_rank * size_t(world_size()));
    ++log_->calls[int(profiler::CollectiveKind::all_to_all)];
    return inner_.all_to_all_async(send, recv, bytes_per_rank);
  }
  HandlePtr send_async(const void* buf, size_t bytes, int peer) override {
    check("send", buf, bytes);
    ++log_->calls[int(profiler::CollectiveKind::send)];
    return inner_.send_async(buf, bytes, peer);
  }
  HandlePtr recv_async(void* buf, size_t bytes, int peer) override {
    check("recv", buf, bytes);
    ++log_->calls[int(profiler::CollectiveKind::recv)];
    return inner_.recv_async(buf, bytes, peer);
  }
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override {
    check("send_recv send", send, send_bytes);
    check("send_recv recv", recv, recv_bytes);
    if (send_bytes) ++log_->calls[int(profiler::CollectiveKind::send)];
    if (recv_bytes) ++log_->calls[int(profiler::CollectiveKind::recv)];
    return inner_.send_recv_async(send, send_bytes, dst, recv, recv_bytes, src);
  }

  std::vector<std::string> violations() const {
    std::lock_guard lock(log_->mutex);
    return log_->violations;
  }
  // This communicator's and its groups' calls.
  uint64_t calls(profiler::CollectiveKind k) const { return log_->calls[int(k)]; }
  int splits() const { return log_->splits; }

 private:
  struct Log {
    std::mutex mutex;
    std::vector<std::string> violations;
    std::atomic<uint64_t> calls[profiler::kCollectiveKindCount] = {};
    std::atomic<int> splits{0};
  };
  CheckedCommunicator(std::unique_ptr<Communicator> group, std::shared_ptr<Log> log,
                      std::string label, std::function<bool(const void*, size_t)> in_place)
      : owned_(std::move(group)),
        inner_(*owned_),
        log_(std::move(log)),
        label_(std::move(label)),
        ok_(std::move(in_place)) {}

  static size_t total(const std::vector<size_t>& c) {
    size_t t = 0;
    for (size_t x : c) t += x;
    return t;
  }
  void check(const char* what, const void* p, size_t bytes) {
    if (bytes == 0 || ok_(p, bytes)) return;
    std::lock_guard lock(log_->mutex);
    log_->violations.push_back(label_ + " " + what + " (" + std::to_string(bytes) + " bytes)");
  }

  std::unique_ptr<Communicator> owned_;  // a group's inner communicator
  Communicator& inner_;
  std::shared_ptr<Log> log_;
  std::string label_;
  std::function<bool(const void*, size_t)> ok_;
};

}  // namespace hybrid::test
