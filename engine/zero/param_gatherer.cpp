#include "engine/zero/param_gatherer.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/zero/param_store.h"

namespace hybrid::engine {

MemoryLayout ParamGatherer::layout(const ZeroSetup& setup, const ModuleTree& tree) {
  MemoryLayout l;
  const uint64_t d = kernels::dtype_size(setup.param_dtype);
  for (auto* m : tree.param_modules()) {
    const int64_t n = tree.own_range(*m).size();
    l.add(
        "params.gathered." + m->name(), uint64_t(n), d, MemCategory::params, false,
        n < setup.stage3_param_persistence_threshold ? Residency::resident : Residency::on_demand);
  }
  return l;
}

ParamGatherer::ParamGatherer(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
                             comm::Communicator& comm, TrackingAllocator& alloc,
                             const void* param_shard, ParamStore* store, CommWaitRecorder* waits,
                             std::function<int64_t()> clock)
    : setup_(setup),
      tree_(tree),
      part_(part),
      comm_(comm),
      mem_(alloc, layout(setup, tree)),
      shard_(static_cast<const char*>(param_shard)),
      store_(store),
      waits_(waits),
      clock_(std::move(clock)),
      dsize_(kernels::dtype_size(setup.param_dtype)) {
  unit_of_module_.assign(tree.modules().size(), -1);
  for (auto* m : tree.param_modules()) {
    const auto r = tree.own_range(*m);
    Unit u;
    u.range = {r.begin, r.end};
    u.persistent = mem_.layout()[units_.size()].residency == Residency::resident;
    if (u.persistent) {
      u.data = mem_.view(units_.size()).data();
      live_elems_ += u.range.size();
    }
    unit_of_module_[size_t(m->id())] = int(units_.size());
    units_.push_back(std::move(u));
  }
  module_units_.resize(tree.modules().size());
  for (auto* m : tree.modules()) {
    auto& list = module_units_[size_t(m->id())];
    for (auto* p : m->used_params()) {
      const int u = unit_of_module_[size_t(p->owner)];
      if (std::find(list.begin(), list.end(), u) == list.end()) list.push_back(u);
    }
  }
  refresh_persistent();
}

int64_t ParamGatherer::persistent_elements() const {
  int64_t n = 0;
  for (auto& u : units_)
    if (u.persistent) n += u.range.size();
  return n;
}

void ParamGatherer::start_gather(Unit& u) {
  if (store_) {
    // Offloaded partition: a staging buffer must be free; completing the oldest
    // fetch (and issuing its all-gather, in order) frees one.
    while (!store_->can_fetch()) issue_oldest();
  }
  if (!u.data) {
    u.owned = mem_.allocate(size_t(&u - units_.data()));  // unit i is layout entry i
    u.data = u.owned.data();
    live_elems_ += u.range.size();
  }
  const FlatRange own = part_.own();
  const FlatRange mine = u.range.intersect(own);
  if (store_) {
    const FlatRange slice =
        mine.empty() ? FlatRange{0, 0} : FlatRange{mine.begin - own.begin, mine.end - own.begin};
    char* slot =
        static_cast<char*>(u.data) + size_t(mine.empty() ? 0 : mine.begin - u.range.begin) * dsize_;
    u.fetch = store_->fetch(slice, slot);
    u.fetch_tick = tick_;
    fetching_.push_back(size_t(&u - units_.data()));
    return;
  }
  const char* send = shard_ + size_t(mine.empty() ? 0 : mine.begin - own.begin) * dsize_;
  u.pending = comm_.all_gather_async(send, u.data, part_.counts(u.range), setup_.param_dtype);
}

void ParamGatherer::all_gather(Unit& u) {
  const FlatRange mine = u.range.intersect(part_.own());
  // In place: this rank's slice already sits in its slot of the gathered buffer.
  const char* send = static_cast<const char*>(u.data) +
                     size_t(mine.empty() ? 0 : mine.begin - u.range.begin) * dsize_;
  u.pending = comm_.all_gather_async(send, u.data, part_.counts(u.range), setup_.param_dtype);
}

void ParamGatherer::issue_oldest() {
  Unit& f = units_[fetching_.front()];
  const int64_t t0 = clock_();
  store_->wait_fetch(std::exchange(f.fetch, 0));
  if (waits_) waits_->record_wait(t0, clock_());
  fetching_.pop_front();
  all_gather(f);
}

void ParamGatherer::ensure_live(Unit& u) {
  if (!u.data) start_gather(u);
  issue_through(u);
  if (u.pending) {
    const int64_t t0 = clock_();
    u.pending->wait();
    if (waits_) waits_->record_wait(t0, clock_());
    u.pending.reset();
  }
}

void ParamGatherer::release(Unit& u) {
  if (u.persistent || u.refs > 0 || !u.data || pinned_) return;
  issue_through(u);                  // its all-gather still goes out, in order
  if (u.pending) u.pending->wait();  // a prefetch nobody used: let it land first
  u.pending.reset();
  live_elems_ -= u.range.size();
  u.data = nullptr;
  u.owned.reset();
}

void ParamGatherer::prefetch(const std::vector<int>& order, size_t from) {
  int64_t budget = setup_.stage3_prefetch_bucket_size;
  for (size_t i = from; i < order.size() && budget > 0; ++i) {
    for (int ui : module_units_[size_t(order[i])]) {
      Unit& u = units_[size_t(ui)];
      if (u.persistent) continue;
      budget -= u.range.size();  // what is already gathered ahead counts too
      if (u.data) continue;
      if (live_elems_ + u.range.size() > setup_.stage3_max_live_parameters) return;
      start_gather(u);
    }
  }
}

void ParamGatherer::before(const Module& m, bool forward) {
  const auto& units = units_of(m);
  if (units.empty()) return;
  const int dir = forward ? 0 : 1;
  auto& order = order_[dir];
  if (!recorded_[dir]) {
    order.push_back(m.id());
  } else if (cursor_[dir] < order.size() && order[cursor_[dir]] == m.id()) {
    ++cursor_[dir];
  } else {
    // The pass diverged from the recorded one: record afresh.
    recorded_[dir] = false;
    order.assign(1, m.id());
  }
  for (int ui : units) {
    Unit& u = units_[size_t(ui)];
    ensure_live(u);
    ++u.refs;
  }
  // Fetches started before the previous module ran are due: their all-gathers
  // go out now and run during this module.
  ++tick_;
  while (!fetching_.empty() && units_[fetching_.front()].fetch_tick < tick_) issue_oldest();
  if (recorded_[dir]) prefetch(order, cursor_[dir]);
}

void ParamGatherer::after(const Module& m, bool) {
  for (int ui : units_of(m)) {
    Unit& u = units_[size_t(ui)];
    --u.refs;
    release(u);
  }
}

const void* ParamGatherer::param(const ParamSpec& p) const {
  const Unit& u = units_[size_t(unit_of_module_[size_t(p.owner)])];
  if (!u.data || u.pending || u.fetch)
    throw std::logic_error("ZeRO-3: parameter " + p.name + " used while not gathered");
  return static_cast<const char*>(u.data) + size_t(p.offset - u.range.begin) * dsize_;
}

void ParamGatherer::refresh_persistent() {
  for (auto& u : units_)
    if (u.persistent) start_gather(u);
  for (auto& u : units_)
    if (u.persistent) ensure_live(u);
}

void ParamGatherer::release_all() {
  for (int dir = 0; dir < 2; ++dir) {
    if (!order_[dir].empty()) recorded_[dir] = true;
    cursor_[dir] = 0;
  }
  for (auto& u : units_) {
    if (u.refs != 0) throw std::logic_error("ZeRO-3: unbalanced gather/release");
    release(u);
  }
}

void ParamGatherer::pin_all() {
  // Every all-gather goes out before the first wait, so they run back to back.
  for (auto& u : units_)
    if (!u.data) start_gather(u);
  for (auto& u : units_) ensure_live(u);
  pinned_ = true;
}

void ParamGatherer::unpin_all() {
  pinned_ = false;
  for (auto& u : units_) release(u);
}

}  // namespace hybrid::engine
