// The run store's side of the column tables (profiler/columns.h): the SQL
// that inserts and selects a row type, and its binds and reads, all from the
// row's one table. Internal to the store.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "profiler/columns.h"
#include "profiler/event.h"
#include "profiler/generation_columns.h"
#include "profiler/profile_columns.h"
#include "profiler/store/connection.h"
#include "profiler/sweep_columns.h"

namespace hybrid::profiler::store {

// Status enums and generation kinds are kept as their names; every other value as it is (a
// Category as its number).
inline std::string_view sql_value(RunStatus s) { return to_string(s); }
inline std::string_view sql_value(SweepStatus s) { return to_string(s); }
inline std::string_view sql_value(TrialStatus s) { return to_string(s); }
inline std::string_view sql_value(GenerationKind k) { return to_string(k); }
template <class T>
const T& sql_value(const T& v) {
  return v;
}

template <class T>
constexpr bool is_optional = false;
template <class T>
constexpr bool is_optional<std::optional<T>> = true;

// Reads result column `col` as a T. A status that is not one throws
// std::invalid_argument (the reader names the row: read_stored); a category
// beyond the known ones (a newer build's) reads as `other`.
template <class T>
T read_value(const Statement& st, int col) {
  if constexpr (is_optional<T>) {
    return st.is_null(col) ? T() : T(read_value<typename T::value_type>(st, col));
  } else if constexpr (std::is_same_v<T, bool>) {
    return st.i64(col) != 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return st.text(col);
  } else if constexpr (std::is_floating_point_v<T>) {
    return st.f64(col);  // NULL (a NaN written) reads as NaN
  } else if constexpr (std::is_same_v<T, Category>) {
    const int64_t c = st.i64(col);
    return c >= 0 && c < kCategoryCount ? Category(c) : Category::other;
  } else if constexpr (std::is_same_v<T, RunStatus>) {
    return parse_run_status(st.text(col));
  } else if constexpr (std::is_same_v<T, SweepStatus>) {
    return parse_sweep_status(st.text(col));
  } else if constexpr (std::is_same_v<T, TrialStatus>) {
    return parse_trial_status(st.text(col));
  } else if constexpr (std::is_same_v<T, GenerationKind>) {
    return parse_generation_kind(st.text(col));
  } else if constexpr (std::is_unsigned_v<T>) {
    return T(st.u64(col));
  } else {
    static_assert(std::is_integral_v<T>, "a column type the store does not know");
    return T(st.i64(col));
  }
}

// "a, b, c", each name after `prefix` (e.g. "e." for a table's alias).
template <class Cols>
std::string column_names(const Cols& cols, std::string_view prefix = {}) {
  std::string out;
  columns::for_each(cols, [&](const auto& c) {
    if (!out.empty()) out += ", ";
    out.append(prefix).append(c.name);
  });
  return out;
}

template <class Row>
std::string column_names(std::string_view prefix = {}) {
  return column_names(columns::Table<Row>::columns, prefix);
}

// "<verb> INTO <table> (<keys>, <columns>) VALUES (?1, ..., ?n)": the keys
// (run_id, ...) are ?1.., the row's columns follow (bind_row after them).
template <class Row>
std::string insert_sql(std::string_view verb, std::initializer_list<std::string_view> keys) {
  std::string names, values;
  for (std::string_view k : keys) names.append(k).append(", ");
  names += column_names<Row>();
  const size_t n = keys.size() + std::tuple_size_v<decltype(columns::Table<Row>::columns)>;
  for (size_t i = 1; i <= n; ++i) values += (i > 1 ? ", ?" : "?") + std::to_string(i);
  return std::string(verb) + " INTO " + columns::Table<Row>::name + " (" + names + ") VALUES (" +
         values + ")";
}

// "SELECT <keys>, <columns> FROM <table> <rest>": the keys (an id) are
// result columns 0.., the row's columns follow (read_row after them).
template <class Row>
std::string select_sql(std::initializer_list<std::string_view> keys, std::string_view rest) {
  std::string names;
  for (std::string_view k : keys) names.append(k).append(", ");
  return "SELECT " + names + column_names<Row>() + " FROM " + columns::Table<Row>::name + " " +
         std::string(rest);
}

// Binds the row's `cols` (all of its table by default) to ?first, ?first + 1, ...
template <class Row, class Cols = decltype(columns::Table<Row>::columns)>
void bind_row(Statement& st, int first, const Row& row,
              const Cols& cols = columns::Table<Row>::columns) {
  int i = first;
  columns::for_each(cols, [&](const auto& c) { st.bind_at(i++, sql_value(c.get(row))); });
}

// Reads the row's columns from result column `first` on into `row`, then what
// follows from them.
template <class Row>
void read_row(const Statement& st, int first, Row& row) {
  int i = first;
  columns::for_each_column<Row>(
      [&](const auto& c) { c.set(row, read_value<columns::value_of<decltype(c)>>(st, i++)); });
  columns::derive(row);
}

template <class Row>
Row read_row(const Statement& st, int first = 0) {
  Row row{};
  read_row(st, first, row);
  return row;
}

// Every row a query returns; `rest` (after FROM <table>) takes `args` as ?1, ?2, ...
template <class Row, class... Args>
std::vector<Row> read_rows(Connection& c, std::string_view rest, const Args&... args) {
  auto st = c.prepare(select_sql<Row>({}, rest));
  st.bind(args...);
  std::vector<Row> out;
  while (st.step()) out.push_back(read_row<Row>(st));
  return out;
}

// Inserts (or replaces) each row after its key `key` (?1: the run, sweep or probe).
template <class Row>
void insert_rows(Connection& c, std::string_view key_name, int64_t key, std::span<const Row> rows) {
  auto st = c.prepare(insert_sql<Row>("INSERT OR REPLACE", {key_name}));
  for (const Row& r : rows) {
    st.bind(key);
    bind_row(st, 2, r);
    st.run();
  }
}

}  // namespace hybrid::profiler::store
