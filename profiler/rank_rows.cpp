#include "profiler/rank_rows.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "profiler/profile_columns.h"

namespace hybrid::profiler {

namespace {

static_assert(std::endian::native == std::endian::little,
              "rank rows are encoded in the host's byte order, little-endian");

constexpr uint32_t kMagic = 0x52524248;  // "HBRR"
constexpr uint32_t kVersion = 3;  // 3: rows as their column tables (profiler/profile_columns.h)

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

// Each value as its type says: numbers fixed-width, a bool and a category one
// byte, strings length-prefixed, an optional a presence byte and the value.
template <class T>
void put_value(Writer& w, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    w.put(v);
  } else if constexpr (requires { v.has_value(); }) {
    w.put(uint8_t(v.has_value()));
    put_value(w, v.value_or(typename T::value_type{}));
  } else if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T>) {
    w.put(uint8_t(v));
  } else {
    w.put(v);
  }
}

// `what` (the table) names the part a damaged buffer breaks in.
template <class T>
T get_value(Reader& in, const char* what, const char* column) {
  if constexpr (std::is_same_v<T, std::string>) {
    return in.get_string(what);
  } else if constexpr (requires(T v) { v.has_value(); }) {
    const bool present = in.get<uint8_t>(what) != 0;
    auto v = get_value<typename T::value_type>(in, what, column);
    return present ? T(v) : std::nullopt;
  } else if constexpr (std::is_same_v<T, bool>) {
    return in.get<uint8_t>(what) != 0;
  } else if constexpr (std::is_same_v<T, Category>) {
    const auto c = in.get<uint8_t>(what);
    if (c >= kCategoryCount)
      throw std::invalid_argument(
          fmt::format("rank rows: {} {} has category {}, beyond the {} known", what, column, c,
                      kCategoryCount));
    return Category(c);
  } else {
    return in.get<T>(what);
  }
}

// A row is its table's columns, in the table's order.
template <class Row>
void put_row(Writer& w, const Row& r) {
  columns::for_each_column<Row>([&](const auto& c) { put_value(w, c.get(r)); });
}

template <class Row>
void get_row(Reader& in, Row& r) {
  columns::for_each_column<Row>([&](const auto& c) {
    c.set(r, get_value<columns::value_of<decltype(c)>>(in, columns::Table<Row>::name, c.name));
  });
  columns::derive(r);
}

// An event's name is its index into the names sent after the events.
void put_row(Writer& w, const Event& e) {
  w.put(e.name_id);
  put_row<Event>(w, e);
}

void get_row(Reader& in, Event& e) {
  e.name_id = in.get<uint32_t>("events");
  get_row<Event>(in, e);
}

void put_row(Writer& w, const std::string& s) { w.put(s); }
void get_row(Reader& in, std::string& s) { s = in.get_string("event names"); }

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
  put_row(w, rows.rank);
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
  get_row(in, rows.rank);
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
