#include "engine/zero/grad_reducer.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/zero/bucket_plan.h"

namespace hybrid::engine {

using kernels::dtype_size;

namespace {
std::string bucket_name(const char* what, int b) {
  return std::string("comm.") + what + "." + std::to_string(b);
}
}  // namespace

MemoryLayout GradReducer::layout(const ZeroSetup& setup, const ModuleTree& tree,
                                 const Partition& part) {
  const uint64_t P = uint64_t(part.padded()), S = uint64_t(part.shard_size());
  const uint64_t d = dtype_size(setup.param_dtype), a = dtype_size(setup.accum_dtype);
  MemoryLayout l;
  // All-reduce works in place: no separate buffer receives this rank's part.
  const bool recv = !setup.all_reduce_gradients();
  if (setup.stage < 2) {
    l.add("grads.working", P, d, MemCategory::grads, true);
    if (setup.separate_accum()) l.add("grads.accum", P, a, MemCategory::grads, true);
    if (setup.stage == 1 && recv) l.add("grads.reduced", S, a, MemCategory::grads, true);
    return l;
  }
  l.add("grads.accum", S, a, MemCategory::grads, true);
  const auto shared = shared_parameters(tree);
  for (auto* p : tree.params())
    if (shared[size_t(p->id)]) {
      l.add("comm.shared." + p->name, uint64_t(p->numel), d, MemCategory::comm, true);
      if (recv)
        l.add("comm.shared_recv." + p->name, std::min(uint64_t(p->numel), S), d, MemCategory::comm);
    }
  const uint64_t cap = uint64_t(reduce_bucket_capacity(tree, setup.reduce_bucket_size));
  for (int b = 0; b < (setup.overlap_comm ? 2 : 1); ++b) {
    l.add(bucket_name("bucket", b), cap, d, MemCategory::comm);
    // A range of at most cap elements overlaps one shard in at most this many.
    if (recv) l.add(bucket_name("bucket_recv", b), std::min(cap, S), d, MemCategory::comm);
  }
  return l;
}

GradReducer::GradReducer(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
                         comm::Communicator& comm, TrackingAllocator& alloc,
                         CommWaitRecorder* waits, std::function<int64_t()> clock)
    : setup_(setup),
      tree_(tree),
      part_(part),
      comm_(comm),
      backend_(alloc.backend()),
      waits_(waits),
      clock_(std::move(clock)),
      staged_(setup.stage >= 2),
      dsize_(dtype_size(setup.param_dtype)),
      asize_(dtype_size(setup.accum_dtype)),
      mem_(alloc, layout(setup, tree, part)) {
  const auto& params = tree.params();
  shared_ = shared_parameters(tree);
  bucket_cap_ = reduce_bucket_capacity(tree, setup.reduce_bucket_size);
  working_ = mem_.view_if_present("grads.working");
  accum_ = mem_.view_if_present("grads.accum");
  reduced_ = mem_.view_if_present("grads.reduced");
  if (!staged_) return;
  shared_bufs_.resize(params.size());
  shared_recv_.resize(params.size());
  for (auto* p : params)
    if (shared_[size_t(p->id)]) {
      shared_bufs_[size_t(p->id)] = mem_.view("comm.shared." + p->name);
      shared_recv_[size_t(p->id)] = mem_.view_if_present("comm.shared_recv." + p->name);
    }
  staged_addr_.assign(params.size(), nullptr);
  for (int b = 0; b < (setup.overlap_comm ? 2 : 1); ++b) {
    buckets_[size_t(b)].mem = mem_.view(bucket_name("bucket", b));
    buckets_[size_t(b)].recv = mem_.view_if_present(bucket_name("bucket_recv", b));
  }
}

void GradReducer::begin_backward(bool reduce) {
  reduce_ = reduce;
  open_ = {0, 0};
  if (!staged_) return;
  // Shared gradients are accumulated over the whole backward pass: their previous
  // reduction must be done before they are cleared.
  finish();
  for (auto& b : shared_bufs_)
    if (!b.empty()) backend_.zero(b.data(), b.bytes());
}

void GradReducer::before_module_backward(const Module& m) {
  // A module's unshared gradients form one contiguous range that enters one
  // bucket as a whole: a bucket must never be reduced while the module that
  // writes into it is still to run.
  FlatRange run{0, 0};
  for (auto* p : m.own_params()) {
    if (shared_[size_t(p->id)]) continue;
    const FlatRange r{p->offset, p->offset + p->numel};
    if (run.empty()) {
      run = r;
    } else if (r.begin == run.end) {
      run.end = r.end;
    } else {
      throw std::logic_error("ZeRO: module " + m.name() +
                             " has non-contiguous unshared parameters");
    }
  }
  if (run.empty()) return;
  assign(run);
  if (staged_)
    for (auto* p : m.own_params())
      if (!shared_[size_t(p->id)]) {
        char* addr = staging_address(p->offset);
        backend_.zero(addr, size_t(p->numel) * dsize_);
        staged_addr_[size_t(p->id)] = addr;
      }
}

void* GradReducer::grad(const ParamSpec& p) {
  if (!staged_) return static_cast<char*>(working_.data()) + size_t(p.offset) * dsize_;
  if (shared_[size_t(p.id)]) return shared_bufs_[size_t(p.id)].data();
  return staged_addr_[size_t(p.id)];
}

char* GradReducer::staging_address(int64_t flat) const {
  return buckets_[size_t(current_)].mem.as<char>() +
         size_t(bucket_cap_ - (open_.end - flat)) * dsize_;
}

void GradReducer::assign(FlatRange range) {
  if (!open_.empty() && range.end == open_.begin && open_.end - range.begin <= bucket_cap_) {
    open_.begin = range.begin;
    return;
  }
  close_bucket();
  open_ = range;
  if (staged_) {
    if (setup_.overlap_comm) current_ = 1 - current_;
    auto& bucket = buckets_[size_t(current_)];
    if (bucket.pending >= 0) wait_and_apply(size_t(bucket.pending));
    bucket.pending = -1;
  }
}

void GradReducer::close_bucket() {
  if (open_.empty()) return;
  const FlatRange range = open_;
  if (staged_) {
    char* src = staging_address(range.begin);
    open_ = {0, 0};
    auto& bucket = buckets_[size_t(current_)];
    bucket.pending = int(reduce_range(range, src, bucket.recv.data()));
    if (!setup_.overlap_comm) wait_and_apply(pending_.size() - 1);
    return;
  }
  open_ = {0, 0};
  if (setup_.separate_accum()) {
    char* w = working_.as<char>() + size_t(range.begin) * dsize_;
    backend_.add(setup_.accum_dtype, accum_.as<char>() + size_t(range.begin) * asize_,
                 setup_.param_dtype, w, size_t(range.size()), 1.0f);
    backend_.zero(w, size_t(range.size()) * dsize_);
  }
  if (reduce_) {
    reduce_range(range, nullptr, nullptr);
    if (!setup_.overlap_comm) wait_and_apply(pending_.size() - 1);
  }
}

size_t GradReducer::reduce_range(FlatRange range, void* staged_src, void* recv) {
  Pending p;
  p.range = range;
  const size_t n = size_t(range.size());
  char* full = (setup_.separate_accum() ? accum_ : working_).as<char>();
  if (setup_.all_reduce_gradients()) {
    if (staged_) {
      // In place over the staging memory; this rank's part of the sum is added
      // into the shard from there (apply), before the staging memory is reused.
      const FlatRange mine = range.intersect(part_.own());
      p.recv = static_cast<char*>(staged_src) +
               size_t(mine.empty() ? 0 : mine.begin - range.begin) * dsize_;
      p.handle = comm_.all_reduce_async(staged_src, n, setup_.param_dtype, comm::ReduceOp::sum);
    } else {  // stages 0-1: in place; the optimizer reads its range of the full buffer
      p.handle = comm_.all_reduce_async(full + size_t(range.begin) * asize_, n, setup_.accum_dtype,
                                        comm::ReduceOp::sum);
    }
  } else if (setup_.stage == 1) {
    // Lands directly in this rank's slot of the reduced shard.
    const FlatRange own = part_.own(), mine = range.intersect(own);
    char* dst = reduced_.as<char>() + size_t(mine.empty() ? 0 : mine.begin - own.begin) * asize_;
    p.handle =
        comm_.reduce_scatter_async(full + size_t(range.begin) * asize_, dst, part_.counts(range),
                                   setup_.accum_dtype, comm::ReduceOp::sum);
  } else {
    p.recv = recv;
    p.handle = comm_.reduce_scatter_async(staged_src, recv, part_.counts(range), setup_.param_dtype,
                                          comm::ReduceOp::sum);
  }
  pending_.push_back(std::move(p));
  return pending_.size() - 1;
}

void GradReducer::apply(Pending& p) {
  p.applied = true;
  if (!staged_) return;  // stages 0/1 reduce in place
  const FlatRange own = part_.own();
  const FlatRange mine = p.range.intersect(own);
  if (mine.empty()) return;
  backend_.add(setup_.accum_dtype, accum_.as<char>() + size_t(mine.begin - own.begin) * asize_,
               setup_.param_dtype, p.recv, size_t(mine.size()), 1.0f);
}

void GradReducer::wait_and_apply(size_t index) {
  Pending& p = pending_[index];
  if (p.applied) return;
  const int64_t t0 = clock_();
  p.handle->wait();
  if (waits_) waits_->record_wait(t0, clock_());
  apply(p);
}

void GradReducer::end_backward() {
  close_bucket();
  const auto& params = tree_.params();
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const ParamSpec& p = **it;
    if (!shared_[size_t(p.id)]) continue;
    const FlatRange range{p.offset, p.offset + p.numel};
    if (staged_) {
      reduce_range(range, shared_bufs_[size_t(p.id)].data(), shared_recv_[size_t(p.id)].data());
      if (!setup_.overlap_comm) wait_and_apply(pending_.size() - 1);
    } else {
      open_ = range;  // reuse the bucket path: accumulate, then reduce if due
      close_bucket();
    }
  }
}

void GradReducer::finish() {
  for (size_t i = 0; i < pending_.size(); ++i) wait_and_apply(i);
  pending_.clear();
  for (auto& b : buckets_) b.pending = -1;
}

FlatRange GradReducer::optimizer_range() const {
  return setup_.stage == 0 ? FlatRange{0, part_.padded()} : part_.own();
}

void* GradReducer::optimizer_grads() const {
  if (staged_) return accum_.data();
  if (setup_.stage == 1 && !setup_.all_reduce_gradients()) return reduced_.data();
  char* base = (setup_.separate_accum() ? accum_ : working_).as<char>();
  return base + size_t(optimizer_range().begin) * asize_;
}

void GradReducer::zero_accumulated() {
  if (!working_.empty()) backend_.zero(working_.data(), working_.bytes());
  if (!accum_.empty()) backend_.zero(accum_.data(), accum_.bytes());
}

}  // namespace hybrid::engine
