// The Handle every CPU-side communicator returns: completed once by the thread
// that ran the collective, waited on by the compute thread through a condition
// variable (no spinning). A failure is stored and rethrown by every wait().
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

class CompletionHandle final : public Handle {
 public:
  void wait() override {
    if (!done_.load(std::memory_order_acquire)) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return done_.load(std::memory_order_relaxed); });
    }
    if (error_) std::rethrow_exception(error_);
  }
  bool ready() const override { return done_.load(std::memory_order_acquire); }

  // Called once; error_ is published by the release store of done_.
  void complete(std::exception_ptr error = nullptr) {
    {
      std::lock_guard lock(mutex_);
      error_ = std::move(error);
      done_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  }

 private:
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::exception_ptr error_;
};

inline std::shared_ptr<CompletionHandle> completed_handle(std::exception_ptr error = nullptr) {
  auto h = std::make_shared<CompletionHandle>();
  h->complete(std::move(error));
  return h;
}

}  // namespace hybrid::engine::comm
