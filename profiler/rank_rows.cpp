#include "profiler/rank_rows.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace hybrid::profiler {

namespace {

static_assert(std::endian::native == std::endian::little,
              "rank rows are encoded in the host's byte order, little-endian");

constexpr uint32_t kMagic = 0x52524248;  // "HBRR"
constexpr uint32_t kVersion = 2;         // 2: pipeline stage, bubble, comm group

class Writer {
 public:
  template <class T>
  requires std::is_arithmetic_v<T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void put(const std::string& s) {
    put(uint64_t(s.size()));
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  template <class T>
  requires std::is_arithmetic_v<T> T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string get_string(const char* what) {
    const auto n = get<uint64_t>(what);
    need(n, what);
    std::string s(in_.substr(at_, size_t(n)));
    at_ += size_t(n);
    return s;
  }
  // A list's length, checked against what is left (every element takes a byte
  // at least), so a damaged length fails here instead of allocating.
  size_t get_count(const char* what) {
    const auto n = get<uint64_t>(what);
    if (n > in_.size() - at_)
      throw std::invalid_argument(fmt::format(
          "rank rows: {} claims {} entries, only {} bytes are left", what, n, in_.size() - at_));
    return size_t(n);
  }
  size_t left() const { return in_.size() - at_; }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > in_.size() - at_)
      throw std::invalid_argument(
          fmt::format("rank rows: truncated in {} (needs {} bytes at offset {}, the buffer has {})",
                      what, n, at_, in_.size()));
  }
  std::string_view in_;
  size_t at_ = 0;
};

void put_rank(Writer& w, const RankInfo& r) {
  w.put(int32_t(r.rank));
  w.put(r.host);
  w.put(r.pid);
  w.put(r.epoch_unix_ns);
  w.put(int32_t(r.local_rank));
  w.put(int32_t(r.local_size));
  w.put(int32_t(r.threads));
  w.put(r.host_memory_bytes);
  w.put(int32_t(r.pipeline_stage));
}

RankInfo get_rank(Reader& in) {
  RankInfo r;
  r.rank = in.get<int32_t>("rank");
  r.host = in.get_string("rank host");
  r.pid = in.get<int64_t>("rank pid");
  r.epoch_unix_ns = in.get<int64_t>("rank epoch");
  r.local_rank = in.get<int32_t>("rank local_rank");
  r.local_size = in.get<int32_t>("rank local_size");
  r.threads = in.get<int32_t>("rank threads");
  r.host_memory_bytes = in.get<uint64_t>("rank host_memory_bytes");
  r.pipeline_stage = in.get<int32_t>("rank pipeline_stage");
  return r;
}

void put_row(Writer& w, const StepRankRow& r) {
  w.put(r.step);
  w.put(int32_t(r.rank));
  w.put(r.compute_ms);
  w.put(r.comm_ms);
  w.put(r.exposed_comm_ms);
  w.put(r.bubble_ms);
}

void get_row(Reader& in, StepRankRow& r) {
  const char* what = "step_ranks";
  r.step = in.get<int64_t>(what);
  r.rank = in.get<int32_t>(what);
  r.compute_ms = in.get<double>(what);
  r.comm_ms = in.get<double>(what);
  r.exposed_comm_ms = in.get<double>(what);
  r.bubble_ms = in.get<double>(what);
}

void put_row(Writer& w, const StepTimerRow& r) {
  w.put(r.step);
  w.put(int32_t(r.rank));
  w.put(r.name);
  w.put(r.ms);
}

void get_row(Reader& in, StepTimerRow& r) {
  const char* what = "step_timers";
  r.step = in.get<int64_t>(what);
  r.rank = in.get<int32_t>(what);
  r.name = in.get_string(what);
  r.ms = in.get<double>(what);
}

void put_row(Writer& w, const LayerStat& r) {
  w.put(int32_t(r.rank));
  w.put(r.module_id);
  w.put(r.step);
  for (int64_t v : {r.fwd_ns, r.bwd_ns}) w.put(v);
  for (uint64_t v : {r.fwd_flops, r.bwd_flops, r.fwd_macs, r.bwd_macs}) w.put(v);
  for (int64_t v : {r.calls, r.host_fwd_ns, r.host_bwd_ns, r.recompute_ns}) w.put(v);
  w.put(r.recompute_flops);
  w.put(r.host_recompute_ns);
}

void get_row(Reader& in, LayerStat& r) {
  const char* what = "layer_stats";
  r.rank = in.get<int32_t>(what);
  r.module_id = in.get<int32_t>(what);
  r.step = in.get<int64_t>(what);
  for (int64_t* v : {&r.fwd_ns, &r.bwd_ns}) *v = in.get<int64_t>(what);
  for (uint64_t* v : {&r.fwd_flops, &r.bwd_flops, &r.fwd_macs, &r.bwd_macs})
    *v = in.get<uint64_t>(what);
  for (int64_t* v : {&r.calls, &r.host_fwd_ns, &r.host_bwd_ns, &r.recompute_ns})
    *v = in.get<int64_t>(what);
  r.recompute_flops = in.get<uint64_t>(what);
  r.host_recompute_ns = in.get<int64_t>(what);
}

void put_row(Writer& w, const GpuRankTimeline& t) {
  w.put(int32_t(t.rank));
  for (int64_t v : {t.first_start_ns, t.last_end_ns, t.span_ns, t.idle_ns, t.compute_ns,
                    t.non_compute_ns, t.comm_ns, t.memory_ns, t.comm_overlap_ns, t.exposed_comm_ns})
    w.put(v);
  for (int64_t v : t.exclusive_ns) w.put(v);
  for (uint64_t v : {t.computation_kernels, t.communication_kernels, t.memory_records}) w.put(v);
}

void get_row(Reader& in, GpuRankTimeline& t) {
  const char* what = "gpu_timeline";
  t.rank = in.get<int32_t>(what);
  for (int64_t* v :
       {&t.first_start_ns, &t.last_end_ns, &t.span_ns, &t.idle_ns, &t.compute_ns, &t.non_compute_ns,
        &t.comm_ns, &t.memory_ns, &t.comm_overlap_ns, &t.exposed_comm_ns})
    *v = in.get<int64_t>(what);
  for (int64_t& v : t.exclusive_ns) v = in.get<int64_t>(what);
  for (uint64_t* v : {&t.computation_kernels, &t.communication_kernels, &t.memory_records})
    *v = in.get<uint64_t>(what);
}

void put_row(Writer& w, const Event& e) {
  w.put(e.start_ns);
  w.put(e.dur_ns);
  w.put(e.bytes);
  w.put(e.flops);
  w.put(e.name_id);
  w.put(e.step);
  w.put(e.module_id);
  w.put(e.rank);
  w.put(e.lane);
  w.put(uint8_t(e.category));
  w.put(uint8_t(e.scope));
}

Category get_category(Reader& in, const char* what) {
  const auto c = in.get<uint8_t>(what);
  if (c >= kCategoryCount)
    throw std::invalid_argument(
        fmt::format("rank rows: {} has category {}, beyond the {} known", what, c, kCategoryCount));
  return Category(c);
}

void get_row(Reader& in, Event& e) {
  const char* what = "events";
  e.start_ns = in.get<int64_t>(what);
  e.dur_ns = in.get<int64_t>(what);
  e.bytes = in.get<uint64_t>(what);
  e.flops = in.get<uint64_t>(what);
  e.name_id = in.get<uint32_t>(what);
  e.step = in.get<int32_t>(what);
  e.module_id = in.get<int32_t>(what);
  e.rank = in.get<uint16_t>(what);
  e.lane = in.get<uint16_t>(what);
  e.category = get_category(in, "an event");
  e.scope = get_category(in, "an event's scope");
}

void put_row(Writer& w, const std::string& s) { w.put(s); }
void get_row(Reader& in, std::string& s) { s = in.get_string("event names"); }

void put_row(Writer& w, const CommStatRow& r) {
  w.put(int32_t(r.rank));
  w.put(r.op);
  w.put(r.bytes);
  for (int64_t v : {r.count, r.total_ns, r.min_ns, r.max_ns}) w.put(v);
  w.put(r.algbw_gbps);
  w.put(r.busbw_gbps);
  w.put(r.link);
  w.put(r.group);
}

void get_row(Reader& in, CommStatRow& r) {
  const char* what = "comm_stats";
  r.rank = in.get<int32_t>(what);
  r.op = in.get_string(what);
  r.bytes = in.get<uint64_t>(what);
  for (int64_t* v : {&r.count, &r.total_ns, &r.min_ns, &r.max_ns}) *v = in.get<int64_t>(what);
  r.algbw_gbps = in.get<double>(what);
  r.busbw_gbps = in.get<double>(what);
  r.link = in.get_string(what);
  r.group = in.get_string(what);
}

void put_row(Writer& w, const MemoryRow& r) {
  w.put(int32_t(r.rank));
  w.put(r.category);
  w.put(r.current_bytes);
  w.put(r.peak_bytes);
  w.put(uint8_t(r.predicted_bytes.has_value()));
  w.put(r.predicted_bytes.value_or(0));
}

void get_row(Reader& in, MemoryRow& r) {
  const char* what = "memory";
  r.rank = in.get<int32_t>(what);
  r.category = in.get_string(what);
  r.current_bytes = in.get<uint64_t>(what);
  r.peak_bytes = in.get<uint64_t>(what);
  const bool predicted = in.get<uint8_t>(what) != 0;
  const auto bytes = in.get<uint64_t>(what);
  if (predicted) r.predicted_bytes = bytes;
}

template <class T>
void put_list(Writer& w, const std::vector<T>& rows) {
  w.put(uint64_t(rows.size()));
  for (const auto& r : rows) put_row(w, r);
}

template <class T>
void get_list(Reader& in, std::vector<T>& rows, const char* what) {
  rows.resize(in.get_count(what));
  for (auto& r : rows) get_row(in, r);
}

}  // namespace

std::string encode_rank_rows(const RankRows& rows) {
  Writer w;
  w.put(kMagic);
  w.put(kVersion);
  put_rank(w, rows.rank);
  put_list(w, rows.step_ranks);
  put_list(w, rows.step_timers);
  put_list(w, rows.layers);
  put_list(w, rows.gpu);
  put_list(w, rows.events.events);
  put_list(w, rows.events.names);
  put_list(w, rows.comm);
  put_list(w, rows.memory);
  return w.take();
}

RankRows decode_rank_rows(std::string_view bytes) {
  Reader in(bytes);
  if (const auto magic = in.get<uint32_t>("the header"); magic != kMagic)
    throw std::invalid_argument(
        fmt::format("rank rows: bad magic {:#010x} (want {:#010x})", magic, kMagic));
  if (const auto version = in.get<uint32_t>("the header"); version != kVersion)
    throw std::invalid_argument(fmt::format(
        "rank rows: version {} from the sender, this build reads {}", version, kVersion));
  RankRows rows;
  rows.rank = get_rank(in);
  get_list(in, rows.step_ranks, "step_ranks");
  get_list(in, rows.step_timers, "step_timers");
  get_list(in, rows.layers, "layer_stats");
  get_list(in, rows.gpu, "gpu_timeline");
  get_list(in, rows.events.events, "events");
  get_list(in, rows.events.names, "event names");
  get_list(in, rows.comm, "comm_stats");
  get_list(in, rows.memory, "memory");
  if (in.left() != 0)
    throw std::invalid_argument(
        fmt::format("rank rows: {} bytes left over after the last list", in.left()));
  return rows;
}

}  // namespace hybrid::profiler
