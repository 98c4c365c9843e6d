// Column tables: each stored row type is described once, as the list of its
// columns in the run store (a name, and the member or accessor that holds the
// value). What moves rows follows from that list: the run store's INSERTs,
// SELECTs, binds and reads (profiler/store/row_sql.h), and the encoding of the
// rows a rank hands to rank 0 (profiler/rank_rows.cpp). The CREATE TABLE text
// does not: it is the history of released migrations (profiler/store/
// schema_vN.cpp), which never changes, and a test holds every table to the
// migrated schema (tests/profiler/store_columns_test.cpp).
//
// The tables themselves: profiler/profile_columns.h (runs) and
// profiler/sweep_columns.h (the autotuner). Keys that are not the row's own
// values (run_id, sweep_id, probe_id, an id the store assigns) stay out of a
// table; the code that stores a row binds them.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace hybrid::profiler::columns {

// A column held by a member of the row.
template <class Row, class T>
struct Member {
  using value_type = T;
  const char* name;
  T Row::*member;
  const T& get(const Row& r) const { return r.*member; }
  void set(Row& r, T v) const { r.*member = std::move(v); }
};

// A column held by one element of an array member.
template <class Row, class T, size_t N>
struct Element {
  using value_type = T;
  const char* name;
  std::array<T, N> Row::*member;
  size_t index;
  T get(const Row& r) const { return (r.*member)[index]; }
  void set(Row& r, T v) const { (r.*member)[index] = v; }
};

// A column whose value the row computes, and takes back (e.g. -1 kept as NULL).
template <class Row, class T>
struct Mapped {
  using value_type = T;
  const char* name;
  T (*get_fn)(const Row&);
  void (*set_fn)(Row&, T);
  T get(const Row& r) const { return get_fn(r); }
  void set(Row& r, T v) const { set_fn(r, std::move(v)); }
};

// A column held by a member of an optional member: NULL while that is empty.
// Reading, the group's first column (`opens`) decides whether it is there; a
// later one read as NULL leaves NaN (a double) or the value as it was.
template <class Row, class Part, class T>
struct InOptional {
  using value_type = std::optional<T>;
  const char* name;
  std::optional<Part> Row::*outer;
  T Part::*inner;
  bool opens;
  value_type get(const Row& r) const {
    const auto& part = r.*outer;
    return part ? value_type((*part).*inner) : std::nullopt;
  }
  void set(Row& r, value_type v) const {
    auto& part = r.*outer;
    if (opens && v) part.emplace();
    if (!part) return;
    if (v)
      (*part).*inner = *v;
    else if constexpr (std::is_floating_point_v<T>)
      (*part).*inner = std::numeric_limits<T>::quiet_NaN();
  }
};

template <class Row, class T>
constexpr Member<Row, T> member(const char* name, T Row::*m) {
  return {name, m};
}

template <class Row, class T, size_t N>
constexpr Element<Row, T, N> element(const char* name, std::array<T, N> Row::*m, size_t index) {
  return {name, m, index};
}

template <class Row, class Part, class T>
constexpr InOptional<Row, Part, T> in_optional(const char* name, std::optional<Part> Row::*outer,
                                               T Part::*inner, bool opens = false) {
  return {name, outer, inner, opens};
}

// Specialized for each stored row type:
//   static constexpr const char* name;  // its table in the run store
//   static constexpr auto columns;      // a std::tuple of the above, in the store's order
//   static void derive(Row&);           // optional: the members no column holds
template <class Row>
struct Table;

template <class Cols, class F>
void for_each(const Cols& cols, F&& f) {
  std::apply([&](const auto&... c) { (f(c), ...); }, cols);
}

template <class Row, class F>
void for_each_column(F&& f) {
  for_each(Table<Row>::columns, std::forward<F>(f));
}

template <class Row>
void derive(Row& r) {
  if constexpr (requires { Table<Row>::derive(r); }) Table<Row>::derive(r);
}

template <class Column>
using value_of = typename std::decay_t<Column>::value_type;

}  // namespace hybrid::profiler::columns
