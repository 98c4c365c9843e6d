// Helpers of the run-store tests: the common temporary directory, raw SQL on a database
// file (to build old-version fixtures and inspect what the store wrote), and
// forked child processes that report success through their exit status.
#pragma once

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/common/temp_dir.h"

namespace hybrid::profiler::test {

using hybrid::test::TempDir;  // paths inside come back as strings, which the store takes

// Runs SQL directly on the file, outside the store.
inline void exec_sql(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open(db.c_str(), &h) != SQLITE_OK)
    throw std::runtime_error("cannot open " + db.string());
  sqlite3_busy_timeout(h, 10000);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(h);
  if (rc != SQLITE_OK) throw std::runtime_error("exec_sql: " + msg + " in: " + sql);
}

// The first column of the first row, as text ("" when no row).
inline std::string query_sql(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    throw std::runtime_error("cannot open " + db.string());
  sqlite3_busy_timeout(h, 10000);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(h);
    sqlite3_close(h);
    throw std::runtime_error("query_sql: " + msg + " in: " + sql);
  }
  bool first = true;
  while (sqlite3_step(st) == SQLITE_ROW) {  // all rows, one per line, columns by '|'
    if (!first) out.push_back('\n');
    first = false;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
      if (c) out.push_back('|');
      out.append(t ? t : "NULL");
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Forks a child that runs `body` and exits 0 when it returns true, 1 otherwise
// (exceptions are printed and count as failure). Never returns in the child.
inline pid_t fork_child(const std::function<bool()>& body) {
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid > 0) return pid;
  int code = 1;
  try {
    code = body() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "child " << getpid() << ": " << e.what() << std::endl;
  }
  std::_Exit(code);  // no gtest teardown, no atexit handlers in the child
}

// Exit status of a child (128 + signal when it was killed).
inline int wait_child(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace hybrid::profiler::test
