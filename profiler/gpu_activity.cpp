#include "profiler/gpu_activity.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>

namespace hybrid::profiler {

namespace {
constexpr uint64_t kModuleMask = 0xffffffffull;
constexpr int kCategoryShift = 32;
constexpr int kStepShift = 40;
constexpr uint64_t kMaxStep = (1ull << 24) - 2;
}  // namespace

uint64_t encode_external_id(const ScopeTag& tag) {
  const uint64_t module = uint64_t(uint32_t(tag.module_id + 1));  // -1 → 0
  const uint64_t step = tag.step < 0 ? 0 : std::min<uint64_t>(uint64_t(tag.step), kMaxStep) + 1;
  return (step << kStepShift) | (uint64_t(tag.category) << kCategoryShift) | module;
}

ScopeTag decode_external_id(uint64_t id) {
  const uint64_t cat = (id >> kCategoryShift) & 0xff;
  if (cat >= uint64_t(kCategoryCount))
    throw std::invalid_argument("decode_external_id: category " + std::to_string(cat) +
                                " out of range in external id " + std::to_string(id));
  ScopeTag tag;
  tag.module_id = int32_t(uint32_t(id & kModuleMask)) - 1;
  tag.category = Category(cat);
  tag.step = int32_t(id >> kStepShift) - 1;
  return tag;
}

std::string short_kernel_name(std::string_view name) {
  std::string full(name);
  if (name.starts_with("_Z")) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(
        abi::__cxa_demangle(full.c_str(), nullptr, nullptr, &status), std::free);
    if (status == 0 && d) full = d.get();
  }
  // Drop the parameter list: the last top-level "(...)" at the end.
  if (!full.empty() && full.back() == ')') {
    int depth = 0;
    for (size_t i = full.size(); i-- > 0;) {
      if (full[i] == ')')
        ++depth;
      else if (full[i] == '(' && --depth == 0) {
        // "(anonymous namespace)" is part of the name, not a parameter list.
        if (i > 0) full.resize(i);
        break;
      }
    }
  }
  // Drop a leading return type ("void "), present for templates. Only a space
  // outside template brackets separates it.
  int depth = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '<' || c == '(')
      ++depth;
    else if (c == '>' || c == ')')
      --depth;
    else if (c == ' ' && depth == 0) {
      full.erase(0, i + 1);
      break;
    }
  }
  return full;
}

std::string memcpy_name(uint8_t copy_kind) {
  switch (copy_kind) {
    case 1:
      return "memcpy HtoD";
    case 2:
      return "memcpy DtoH";
    case 3:
      return "memcpy HtoA";
    case 4:
      return "memcpy AtoH";
    case 5:
      return "memcpy AtoA";
    case 6:
      return "memcpy AtoD";
    case 7:
      return "memcpy DtoA";
    case 8:
      return "memcpy DtoD";
    case 9:
      return "memcpy HtoH";
    case 10:
      return "memcpy PtoP";
    default:
      return "memcpy";
  }
}

// ---- buffer pool ------------------------------------------------------------

ActivityBufferPool::ActivityBufferPool(size_t count, size_t bytes) : bytes_(bytes) {
  if (count == 0 || bytes < 1024)
    throw std::invalid_argument("ActivityBufferPool: need count > 0 and bytes >= 1024, got " +
                                std::to_string(count) + " x " + std::to_string(bytes));
  bytes_ = (bytes + 7) / 8 * 8;
  buffers_.reserve(count);
  for (size_t i = 0; i < count; ++i)
    buffers_.push_back(static_cast<uint8_t*>(::operator new(bytes_, std::align_val_t(8))));
  busy_.assign(count, false);
}

ActivityBufferPool::~ActivityBufferPool() {
  for (uint8_t* b : buffers_) ::operator delete(b, std::align_val_t(8));
}

uint8_t* ActivityBufferPool::acquire() {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (!busy_[i]) {
      busy_[i] = true;
      return buffers_[i];
    }
  }
  ++exhausted_;
  return nullptr;
}

void ActivityBufferPool::release(uint8_t* buffer) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i] == buffer) {
      if (!busy_[i]) throw std::invalid_argument("ActivityBufferPool: buffer released twice");
      busy_[i] = false;
      return;
    }
  }
  throw std::invalid_argument("ActivityBufferPool: release of a buffer not from this pool");
}

size_t ActivityBufferPool::in_use() const {
  std::lock_guard lock(mutex_);
  return size_t(std::count(busy_.begin(), busy_.end(), true));
}

uint64_t ActivityBufferPool::exhausted() const {
  std::lock_guard lock(mutex_);
  return exhausted_;
}

// ---- parser -------------------------------------------------------------------

GpuActivityParser::GpuActivityParser(size_t max_correlations)
    : max_correlations_(max_correlations) {
  if (max_correlations_ == 0)
    throw std::invalid_argument("GpuActivityParser: max_correlations must be > 0");
}

void GpuActivityParser::add_record(GpuActivityRecord r) {
  std::lock_guard lock(mutex_);
  ++stats_.records;
  pending_.push_back({std::move(r), false});
}

void GpuActivityParser::add_external_correlation(const ExternalCorrelation& c) {
  std::lock_guard lock(mutex_);
  correlations_[c.correlation_id] = c.external_id;
  while (correlations_.size() > max_correlations_) {
    correlations_.erase(correlations_.begin());  // ids grow: the oldest goes first
    ++stats_.evicted;
  }
}

void GpuActivityParser::add_dropped(uint64_t n) {
  std::lock_guard lock(mutex_);
  stats_.dropped += n;
}

std::vector<Event> GpuActivityParser::take_events(
    const std::function<uint32_t(std::string_view)>& intern, int64_t clock_offset_ns, bool final) {
  std::lock_guard lock(mutex_);
  std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
    return a.record.start_ns < b.record.start_ns;
  });
  std::vector<Event> out;
  std::vector<Pending> keep;
  std::unordered_map<std::string, uint32_t> name_ids;
  for (Pending& p : pending_) {
    const GpuActivityRecord& r = p.record;
    auto corr = correlations_.find(r.correlation_id);
    if (corr == correlations_.end() && !final && !p.deferred) {
      p.deferred = true;
      keep.push_back(std::move(p));
      continue;
    }
    Event e;
    e.start_ns = int64_t(r.start_ns) + clock_offset_ns;
    e.dur_ns = r.end_ns > r.start_ns ? int64_t(r.end_ns - r.start_ns) : 0;
    e.bytes = r.bytes;
    e.category = r.kind == GpuActivityKind::kernel ? Category::kernel : Category::memcpy;
    auto [lane_it, fresh] = stream_lanes_.try_emplace(r.stream, uint16_t(0));
    if (fresh) lane_it->second = uint16_t(kLaneGpuBase + stream_lanes_.size() - 1);
    e.lane = lane_it->second;
    if (corr != correlations_.end()) {
      try {
        const ScopeTag tag = decode_external_id(corr->second);
        e.module_id = tag.module_id;
        e.step = tag.step;
        e.scope = tag.category;
        ++stats_.attributed;
      } catch (const std::invalid_argument&) {
        ++stats_.unattributed;  // not one of ours (another tool's CUSTOM0 id)
      }
      correlations_.erase(corr);  // one API call launches one activity
    } else {
      ++stats_.unattributed;
    }
    auto name_it = name_ids.find(r.name);
    if (name_it == name_ids.end()) {
      std::string shown = r.name;
      if (r.kind == GpuActivityKind::kernel) {
        auto sn = short_names_.find(r.name);
        if (sn == short_names_.end())
          sn = short_names_.emplace(r.name, short_kernel_name(r.name)).first;
        shown = sn->second;
      }
      name_it = name_ids.emplace(r.name, intern(shown)).first;
    }
    e.name_id = name_it->second;
    out.push_back(e);
  }
  pending_ = std::move(keep);
  stats_.events += out.size();
  return out;
}

GpuActivityParser::Stats GpuActivityParser::stats() const {
  std::lock_guard lock(mutex_);
  Stats s = stats_;
  s.pending = pending_.size();
  return s;
}

size_t GpuActivityParser::stream_count() const {
  std::lock_guard lock(mutex_);
  return stream_lanes_.size();
}

}  // namespace hybrid::profiler
