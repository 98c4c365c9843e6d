#include "profiler/store/connection.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

namespace hybrid::profiler::store {

namespace {

bool is_busy(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

std::string sql_excerpt(std::string_view sql) {
  constexpr size_t kMax = 80;
  std::string s(sql.substr(0, kMax));
  for (char& c : s)
    if (c == '\n') c = ' ';
  return sql.size() > kMax ? s + "..." : s;
}

// Whether the file (or, not yet created, its folder) is on a read-only mount.
bool on_read_only_filesystem(const std::string& path) {
  struct statvfs fs {};
  std::error_code ec;
  const std::filesystem::path p(path);
  const std::filesystem::path at =
      std::filesystem::exists(p, ec) ? p : (p.has_parent_path() ? p.parent_path() : ".");
  return ::statvfs(at.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY);
}

// "file:/path?immutable=1", with the characters a URI path cannot hold escaped.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  return uri + "?immutable=1";
}

// Whether this process may create files beside the database (its -wal and -shm).
bool folder_writable(const std::string& path, bool read_only_fs) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  return !read_only_fs && ::access(dir.c_str(), W_OK) == 0;
}

// How a reader opens the store. A WAL database is read through its -shm file,
// which SQLite creates beside it when missing; where the folder cannot be
// written (read-only media, or another user's read-only folder):
// - a -wal holding frames, with its -shm: SQLite (3.22+) reads both read-only,
//   through a private index, so the plain read-only open sees every commit;
// - no -wal, or an empty one: every committed transaction is in the file, and
//   immutable=1 reads it without any -shm;
// - a -wal holding frames without a -shm: nothing here can read those commits,
//   and immutable would show the file without them, silently: refused.
bool open_immutable(const std::string& path, bool read_only_fs) {
  if (folder_writable(path, read_only_fs)) return false;
  std::error_code ec;
  const auto wal_size = std::filesystem::file_size(path + "-wal", ec);
  if (ec || wal_size == 0) return true;
  if (std::filesystem::exists(path + "-shm", ec)) return false;
  throw StoreError("database " + path + " cannot be read here: its " + path +
                   "-wal holds commits not yet in the file, and SQLite needs a " + path +
                   "-shm beside it to read them, which this folder does not let it create; "
                   "open the store once where its folder can be written, or copy the "
                   "database with its -wal file to a writable folder");
}

// Why a database file that exists cannot be opened for writing.
std::string why_not_writable(const std::string& path) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY))
    return "its filesystem is mounted read-only";
  if (::access(path.c_str(), W_OK) != 0) return std::strerror(errno);
  return "SQLite opened it read-only (is the folder writable, for its -wal and -shm files?)";
}

}  // namespace

// --- Statement --------------------------------------------------------------

Statement::Statement(Connection& conn, sqlite3_stmt* stmt, bool* in_use)
    : conn_(conn), stmt_(stmt), in_use_(in_use) {}

Statement::~Statement() {
  if (in_use_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *in_use_ = false;
  } else {
    sqlite3_finalize(stmt_);
  }
}

void Statement::bind_int(int i, int64_t v) {
  if (int rc = sqlite3_bind_int64(stmt_, i, v); rc != SQLITE_OK) conn_.fail(rc, "bind");
}

void Statement::bind_u64(int i, uint64_t v) {
  // SQLite integers are signed 64-bit; larger counts would silently wrap.
  if (v > uint64_t(std::numeric_limits<int64_t>::max()))
    throw StoreError("database " + conn_.path() + ": value " + std::to_string(v) +
                     " for parameter " + std::to_string(i) + " exceeds the 64-bit signed range");
  bind_int(i, int64_t(v));
}

void Statement::bind_double(int i, double v) {
  if (int rc = sqlite3_bind_double(stmt_, i, v); rc != SQLITE_OK) conn_.fail(rc, "bind");
}

void Statement::bind_text(int i, std::string_view v) {
  // An empty view may hold a null pointer, which SQLite would bind as NULL.
  const char* data = v.data() ? v.data() : "";
  if (int rc = sqlite3_bind_text(stmt_, i, data, int(v.size()), SQLITE_TRANSIENT); rc != SQLITE_OK)
    conn_.fail(rc, "bind");
}

void Statement::bind_null(int i) {
  if (int rc = sqlite3_bind_null(stmt_, i); rc != SQLITE_OK) conn_.fail(rc, "bind");
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  conn_.fail(rc, sql_excerpt(sqlite3_sql(stmt_)));
}

void Statement::run() {
  while (step()) {
  }
  sqlite3_reset(stmt_);
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int64_t Statement::i64(int col) const { return sqlite3_column_int64(stmt_, col); }
uint64_t Statement::u64(int col) const { return uint64_t(sqlite3_column_int64(stmt_, col)); }

double Statement::f64(int col) const {
  return is_null(col) ? std::numeric_limits<double>::quiet_NaN()
                      : sqlite3_column_double(stmt_, col);
}

std::string Statement::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(stmt_, col))) : std::string();
}

std::optional<int64_t> Statement::opt_i64(int col) const {
  return is_null(col) ? std::nullopt : std::optional<int64_t>(i64(col));
}
std::optional<uint64_t> Statement::opt_u64(int col) const {
  return is_null(col) ? std::nullopt : std::optional<uint64_t>(u64(col));
}
std::optional<double> Statement::opt_f64(int col) const {
  return is_null(col) ? std::nullopt : std::optional<double>(sqlite3_column_double(stmt_, col));
}

// --- Connection -------------------------------------------------------------

Connection::Connection(const std::filesystem::path& path, bool read_only,
                       std::chrono::milliseconds busy_timeout)
    : path_(path.string()), read_only_(read_only), busy_timeout_(busy_timeout) {
  std::error_code ec;
  if (read_only && !std::filesystem::exists(path, ec))
    throw StoreError("database " + path_ + " does not exist (opening read-only)");
  if (std::filesystem::is_directory(path, ec))
    throw StoreError("database " + path_ + " is a directory, not a database file");

  const bool read_only_fs = on_read_only_filesystem(path_);
  if (read_only_fs && !read_only)
    throw StoreError("database " + path_ +
                     " cannot be written: its filesystem is mounted read-only");
  const bool immutable = read_only && open_immutable(path_, read_only_fs);
  const std::string name = immutable ? immutable_uri(path_) : path_;
  const int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
      SQLITE_OPEN_NOMUTEX |  // one RunStore serializes its own calls
      (immutable ? SQLITE_OPEN_URI : 0);
  if (int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr); rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw StoreError("cannot open database " + path_ + ": " + msg);
  }
  try {
    sqlite3_busy_timeout(db_, int(busy_timeout_.count()));
    sqlite3_extended_result_codes(db_, 1);
    check_is_sqlite();
    if (read_only) {
      exec("PRAGMA query_only = ON");
    } else {
      // SQLite falls back to read-only when the file cannot be written; a writer
      // must hear it now, not at its first insert.
      if (sqlite3_db_readonly(db_, "main") == 1)
        throw StoreError("database " + path_ + " cannot be written: " + why_not_writable(path_));
      enable_wal();
    }
    exec("PRAGMA foreign_keys = ON");
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

// The first read of the file: anything that is not SQLite fails here.
void Connection::check_is_sqlite() {
  sqlite3_stmt* probe = nullptr;
  int rc = sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_schema", -1, &probe, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(probe);
    if (rc == SQLITE_ROW) rc = SQLITE_OK;
  }
  sqlite3_finalize(probe);
  if ((rc & 0xff) == SQLITE_NOTADB)
    throw StoreError("database " + path_ + " is not a SQLite database (" + sqlite3_errstr(rc) +
                     ")");
  if (rc != SQLITE_OK) fail(rc, "reading the schema");
}

// WAL: readers (the viewer) never block the writers (ranks, trials), and a
// crash mid-transaction leaves the last committed state.
void Connection::enable_wal() {
  const auto started = std::chrono::steady_clock::now();
  for (int attempt = 1;; ++attempt) {
    try {
      sqlite3_stmt* st = nullptr;
      int rc = sqlite3_prepare_v2(db_, "PRAGMA journal_mode = WAL", -1, &st, nullptr);
      std::string mode;
      if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        mode = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        rc = SQLITE_OK;
      }
      sqlite3_finalize(st);
      if (rc != SQLITE_OK) fail(rc, "PRAGMA journal_mode = WAL");
      if (mode != "wal")
        throw StoreError("database " + path_ + ": cannot switch to WAL mode (journal mode is " +
                         mode + ")");
      break;
    } catch (const StoreBusyError& e) {
      if (attempt >= kWriteAttempts) fail_busy_after(e, started, attempt);
      backoff(attempt);
    }
  }
  exec("PRAGMA synchronous = NORMAL");  // durable across process crashes in WAL mode
}

Connection::~Connection() {
  for (auto& [sql, c] : cache_) sqlite3_finalize(c.stmt);
  sqlite3_close_v2(db_);
}

void Connection::fail(int rc, std::string_view context) const {
  std::string msg = "database " + path_ + ": " + sqlite3_errmsg(db_);
  if (!context.empty()) msg += " (in " + std::string(context) + ")";
  // "disk I/O error" alone hides a full disk: say what the system said.
  const int primary = rc & 0xff;
  if (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN)
    if (const int err = sqlite3_system_errno(db_); err != 0)
      msg += ": " + std::string(std::strerror(err));
  if (is_busy(rc))
    throw StoreBusyError(fmt::format("{}; another process holds the lock (busy timeout {:g} s)",
                                     msg, double(busy_timeout_.count()) / 1000.0));
  if ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_AUTH)
    msg += "; the database is open read-only";
  throw StoreError(msg);
}

void Connection::fail_busy_after(const StoreBusyError& last,
                                 std::chrono::steady_clock::time_point started,
                                 int attempts) const {
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  throw StoreBusyError(fmt::format("{}; gave up after waiting {:.1f} s in all over {} attempts",
                                   last.what(), waited, attempts));
}

void Connection::require_writable() const {
  if (read_only_)
    throw StoreError("database " + path_ + " is open read-only; this operation writes");
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);  // sqlite3_errmsg still holds the message
  if (rc != SQLITE_OK) fail(rc, sql_excerpt(sql));
}

Statement Connection::prepare(const std::string& sql) {
  auto [it, inserted] = cache_.try_emplace(sql);
  Cached& c = it->second;
  if (inserted) {
    if (int rc = sqlite3_prepare_v3(db_, sql.c_str(), int(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &c.stmt, nullptr);
        rc != SQLITE_OK) {
      cache_.erase(it);
      fail(rc, sql_excerpt(sql));
    }
  }
  if (c.in_use) {  // nested use of the same SQL: a private copy
    sqlite3_stmt* own = nullptr;
    if (int rc = sqlite3_prepare_v2(db_, sql.c_str(), int(sql.size()), &own, nullptr);
        rc != SQLITE_OK)
      fail(rc, sql_excerpt(sql));
    return Statement(*this, own, nullptr);
  }
  c.in_use = true;
  return Statement(*this, c.stmt, &c.in_use);
}

int64_t Connection::pragma_int(const std::string& name) {
  auto st = prepare("PRAGMA " + name);
  return st.step() ? st.i64(0) : 0;
}

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int64_t Connection::changes() const { return sqlite3_changes64(db_); }

void Connection::rollback() noexcept {
  if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace hybrid::profiler::store
