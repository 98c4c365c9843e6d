// One SQLite connection with the store's settings: WAL, foreign keys, a busy
// timeout, cached prepared statements, and write transactions that retry when
// another process holds the write lock past the timeout. Internal to the store.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "profiler/store/store_error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace hybrid::profiler::store {

class Connection;

// A cached prepared statement in use; resets itself when it goes out of scope.
class Statement {
 public:
  // `in_use` is the cache's flag for this statement; null for an uncached one.
  Statement(Connection& conn, sqlite3_stmt* stmt, bool* in_use);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds the arguments to ?1, ?2, ... in order.
  template <class... Args>
  Statement& bind(const Args&... args) {
    int i = 0;
    (bind_at(++i, args), ...);
    return *this;
  }

  // Binds one value to ?i: integers, floating point, bool, text, std::optional, nullopt.
  template <class T>
  Statement& bind_at(int i, const T& v) {
    if constexpr (std::is_same_v<T, std::nullopt_t>) {
      bind_null(i);
    } else if constexpr (requires {
                           v.has_value();
                           *v;
                         }) {
      if (v)
        bind_at(i, *v);
      else
        bind_null(i);
    } else if constexpr (std::is_same_v<T, bool>) {
      bind_int(i, v ? 1 : 0);
    } else if constexpr (std::is_floating_point_v<T>) {
      bind_double(i, double(v));
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      bind_u64(i, uint64_t(v));
    } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
      bind_int(i, int64_t(v));
    } else {
      bind_text(i, std::string_view(v));
    }
    return *this;
  }

  bool step();  // true while a row is available
  void run();   // executes to completion, then resets for the next bind

  bool is_null(int col) const;
  int64_t i64(int col) const;
  uint64_t u64(int col) const;
  double f64(int col) const;  // NULL reads as NaN (SQLite stores NaN as NULL)
  std::string text(int col) const;
  std::optional<int64_t> opt_i64(int col) const;
  std::optional<uint64_t> opt_u64(int col) const;
  std::optional<double> opt_f64(int col) const;

 private:
  void bind_int(int i, int64_t v);
  void bind_double(int i, double v);
  void bind_text(int i, std::string_view v);
  void bind_null(int i);
  void bind_u64(int i, uint64_t v);

  Connection& conn_;
  sqlite3_stmt* stmt_;
  bool* in_use_;  // null: not from the cache (the cached one was busy), finalize when done
};

class Connection {
 public:
  static constexpr std::chrono::milliseconds kBusyTimeout{10000};
  static constexpr int kWriteAttempts = 3;  // each waits up to the busy timeout

  // Opens (read-write: creating the file if needed) and applies the pragmas.
  // `busy_timeout`: how long one attempt waits for another process's lock.
  Connection(const std::filesystem::path& path, bool read_only,
             std::chrono::milliseconds busy_timeout = kBusyTimeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  sqlite3* handle() const { return db_; }

  void exec(const std::string& sql);            // statements without results
  Statement prepare(const std::string& sql);    // cached by SQL text
  int64_t pragma_int(const std::string& name);  // e.g. "user_version"
  int64_t last_insert_rowid() const;
  int64_t changes() const;  // rows changed by the last statement

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back on any exception.
  // When the lock is busy past the timeout, the whole body is retried.
  template <class F>
  auto write_transaction(F&& body) -> decltype(body()) {
    require_writable();
    const auto started = std::chrono::steady_clock::now();
    for (int attempt = 1;; ++attempt) {
      try {
        exec("BEGIN IMMEDIATE");
      } catch (const StoreBusyError& e) {
        if (attempt >= kWriteAttempts) fail_busy_after(e, started, attempt);
        backoff(attempt);
        continue;
      }
      try {
        if constexpr (std::is_void_v<decltype(body())>) {
          body();
          exec("COMMIT");
          return;
        } else {
          auto result = body();
          exec("COMMIT");
          return result;
        }
      } catch (const StoreBusyError& e) {
        rollback();
        if (attempt >= kWriteAttempts) fail_busy_after(e, started, attempt);
        backoff(attempt);
      } catch (...) {
        rollback();
        throw;
      }
    }
  }

  // One consistent snapshot for readers that run several queries.
  template <class F>
  auto read_transaction(F&& body) -> decltype(body()) {
    exec("BEGIN");
    try {
      if constexpr (std::is_void_v<decltype(body())>) {
        body();
        exec("COMMIT");
      } else {
        auto result = body();
        exec("COMMIT");
        return result;
      }
    } catch (...) {
      rollback();
      throw;
    }
  }

  void require_writable() const;
  // Throws StoreBusyError / StoreError for an SQLite result code, naming the file.
  [[noreturn]] void fail(int rc, std::string_view context) const;
  // The last attempt of a retried write found the lock still taken: the error
  // says how long all the attempts waited in fact, not one timeout's length.
  [[noreturn]] void fail_busy_after(const StoreBusyError& last,
                                    std::chrono::steady_clock::time_point started,
                                    int attempts) const;

 private:
  void check_is_sqlite();  // the first read of the file
  void enable_wal();       // the journal mode every writer needs
  void rollback() noexcept;
  static void backoff(int attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
  }

  std::string path_;
  bool read_only_;
  std::chrono::milliseconds busy_timeout_;
  sqlite3* db_ = nullptr;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  std::unordered_map<std::string, Cached> cache_;  // node-based: Cached addresses are stable
};

}  // namespace hybrid::profiler::store
