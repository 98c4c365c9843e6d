#include "profiler/tracer.h"

#include <algorithm>
#include <stdexcept>

namespace hybrid::profiler {

namespace {
constexpr size_t kChunkEvents = 4096;
std::atomic<uint64_t> next_tracer_id{1};
}  // namespace

std::string_view category_name(Category c) {
  switch (c) {
    case Category::step:
      return "step";
    case Category::forward:
      return "forward";
    case Category::backward:
      return "backward";
    case Category::optimizer:
      return "optimizer";
    case Category::comm:
      return "comm";
    case Category::data:
      return "data";
    case Category::kernel:
      return "kernel";
    case Category::memcpy:
      return "memcpy";
    case Category::other:
      return "other";
    case Category::recompute:
      return "recompute";
    case Category::prefill:
      return "prefill";
    case Category::decode:
      return "decode";
  }
  return "other";
}

Category parse_category(std::string_view name) {
  for (int i = 0; i < kCategoryCount; ++i)
    if (category_name(Category(i)) == name) return Category(i);
  throw std::invalid_argument("unknown event category '" + std::string(name) + "'");
}

// Written by one producer thread; `count` is published with release so that the
// consumer reads only complete events.
struct Tracer::Chunk {
  Event events[kChunkEvents];
  std::atomic<size_t> count{0};
  std::atomic<Chunk*> next{nullptr};
};

struct Tracer::ThreadBuffer {
  Chunk* head;      // consumer side: oldest chunk not yet freed
  size_t read = 0;  // consumer: events of head already drained
  Chunk* tail;      // producer side
  ThreadBuffer() : head(new Chunk), tail(head) {}
  ~ThreadBuffer() {
    for (Chunk* c = head; c;) {
      Chunk* n = c->next.load(std::memory_order_acquire);
      delete c;
      c = n;
    }
  }
  void push(const Event& e) {
    size_t n = tail->count.load(std::memory_order_relaxed);
    if (n == kChunkEvents) {
      auto* fresh = new Chunk;
      tail->next.store(fresh, std::memory_order_release);
      tail = fresh;
      n = 0;
    }
    tail->events[n] = e;
    tail->count.store(n + 1, std::memory_order_release);
  }
  void drain_into(std::vector<Event>& out) {
    for (;;) {
      size_t n = head->count.load(std::memory_order_acquire);
      out.insert(out.end(), head->events + read, head->events + n);
      read = n;
      Chunk* next = head->next.load(std::memory_order_acquire);
      if (n < kChunkEvents || !next) return;
      delete head;  // full and superseded: the producer never touches it again
      head = next;
      read = 0;
    }
  }
};

Tracer::Tracer(int rank)
    : rank_(rank), id_(next_tracer_id.fetch_add(1)), epoch_(std::chrono::steady_clock::now()) {}

Tracer::~Tracer() = default;

uint32_t Tracer::intern(std::string_view name) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = name_ids_.try_emplace(std::string(name), uint32_t(names_.size()));
  if (inserted) names_.emplace_back(name);
  return it->second;
}

std::string Tracer::name(uint32_t id) const {
  std::lock_guard lock(mutex_);
  return id < names_.size() ? names_[id] : std::string("?");
}

std::vector<std::string> Tracer::names() const {
  std::lock_guard lock(mutex_);
  return names_;
}

Tracer::ThreadBuffer* Tracer::buffer_for_this_thread() {
  // One cached (tracer id → buffer) pair per thread covers the common case of one
  // tracer per process; other tracers fall back to the registration lock.
  thread_local uint64_t cached_id = 0;
  thread_local ThreadBuffer* cached = nullptr;
  if (cached_id == id_) return cached;
  std::lock_guard lock(mutex_);
  buffers_.push_back(std::make_unique<ThreadBuffer>());
  cached_id = id_;
  cached = buffers_.back().get();
  return cached;
}

void Tracer::record(Event e) {
  e.rank = uint16_t(rank_);
  if (e.step < 0) e.step = step();
  buffer_for_this_thread()->push(e);
  recorded_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<Event> Tracer::drain() {
  std::vector<Event> out;
  {
    std::lock_guard lock(mutex_);
    for (auto& b : buffers_) b->drain_into(out);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  return out;
}

Scope::Scope(Tracer* tracer, uint32_t name_id, Category category, int32_t module_id, uint64_t flops,
             uint64_t bytes, uint16_t lane)
    : tracer_(tracer && tracer->enabled() ? tracer : nullptr) {
  if (!tracer_) return;
  event_.name_id = name_id;
  event_.category = category;
  event_.module_id = module_id;
  event_.flops = flops;
  event_.bytes = bytes;
  event_.lane = lane;
  for (auto* l : tracer_->listeners()) l->on_begin(tracer_->name(name_id), category, module_id);
  event_.start_ns = tracer_->now_ns();
}

Scope::~Scope() {
  if (!tracer_) return;
  event_.dur_ns = tracer_->now_ns() - event_.start_ns;
  for (auto* l : tracer_->listeners()) l->on_end(event_.category, event_.module_id);
  tracer_->record(event_);
}

}  // namespace hybrid::profiler
