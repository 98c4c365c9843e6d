// A run store made of real PyTorch profiler traces (tests/profiler/data/kineto,
// from HolisticTraceAnalysis) by the real `hybrid-prof import-kineto`:
//   run 1: trace_filter_sampled_rank-{0,1} (2 ranks of a 128-rank job, steps 551-552, NCCL)
//   run 2: nccl_parser_config_nccl_data (rank 0 of 2, steps 4-6)
// Written into a temporary directory per process; a few hundred ms.
#pragma once

#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/gui/view_test_util.h"

namespace hybrid::gui::test {

struct ImportedDb {
  std::filesystem::path path;  // empty when it could not be made
  std::string error;
  int64_t trace_filter_run = 0;
  int64_t nccl_run = 0;
};

inline const std::string kHybridProf = std::string(HYBRID_BINARY_DIR) + "/profiler/hybrid-prof";
inline const std::filesystem::path kKinetoData =
    std::filesystem::path(HYBRID_SOURCE_DIR) / "tests" / "profiler" / "data" / "kineto";

// Imports `files` (one per rank) as one run into `db`; returns its id, or 0 with `error` set.
inline int64_t import_kineto(const std::filesystem::path& db, const std::vector<std::string>& files,
                             std::string& error) {
  std::string cmd = kHybridProf + " import-kineto --db " + db.string();
  for (const auto& f : files) cmd += " " + (kKinetoData / f).string();
  const auto r = run_command(cmd);
  // It prints the run id on stdout, a line of counts on stderr (merged here).
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (r.status == 0 && !line.empty() && line.find_first_not_of("0123456789") == std::string::npos)
      return std::stoll(line);
  error = "hybrid-prof import-kineto failed (" + std::to_string(r.status) + "): " + r.output;
  return 0;
}

inline ImportedDb make_imported_db(const std::filesystem::path& dir) {
  ImportedDb out;
  if (!std::filesystem::exists(kHybridProf)) {
    out.error = "hybrid-prof is not built (" + kHybridProf + ")";
    return out;
  }
  const auto db = dir / "imported.db";
  out.trace_filter_run = import_kineto(
      db, {"trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"},
      out.error);
  if (out.trace_filter_run == 0) return out;
  out.nccl_run = import_kineto(db, {"nccl_parser_config_nccl_data.json.gz"}, out.error);
  if (out.nccl_run == 0) return out;
  // The viewer opens it read-only: fold the WAL in so the file alone is the database.
  profiler::test::exec_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  out.path = db;
  return out;
}

// The shared database of this test process (made on first use).
inline const ImportedDb& imported_db() {
  static TempDir dir;
  static std::once_flag once;
  static ImportedDb db;
  std::call_once(once, [] { db = make_imported_db(dir.path()); });
  return db;
}

}  // namespace hybrid::gui::test
