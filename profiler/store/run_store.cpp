// RunStore: opening (connection + schema) and the whole-store operations. The
// writers and readers live in run_writer.cpp, run_reader.cpp and sweep_store.cpp.
#include "profiler/store/run_store.h"

#include <fmt/format.h>

#include "base/host.h"
#include "profiler/store/connection.h"
#include "profiler/store/process_info.h"
#include "profiler/store/schema.h"

namespace hybrid::profiler {

int64_t unix_ns_of(std::chrono::steady_clock::time_point t) {
  // Sample both clocks back to back; the offset is exact to within that gap.
  const auto steady_now = std::chrono::steady_clock::now();
  const auto system_now = std::chrono::system_clock::now();
  const auto since_epoch = system_now.time_since_epoch() - (steady_now - t);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count();
}

RunStore::RunStore(const std::filesystem::path& path, OpenMode mode) {
  if (mode == OpenMode::read_write && path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      throw StoreError("database " + path.string() + ": cannot create its directory (" +
                       ec.message() + ")");
  }
  conn_ = std::make_unique<store::Connection>(path, mode == OpenMode::read_only);
  opened_version_ = store::prepare_schema(*conn_);
}

RunStore::~RunStore() = default;

const std::string& RunStore::path() const { return conn_->path(); }
bool RunStore::read_only() const { return conn_->read_only(); }
int RunStore::schema_version() { return store::kSchemaVersion; }
int RunStore::opened_schema_version() const { return opened_version_; }

void RunStore::touch(int64_t run_id) {
  auto st = conn_->prepare("UPDATE runs SET last_update = ?2 WHERE id = ?1");
  st.bind(run_id, store::unix_now()).run();
  if (conn_->changes() == 0)
    throw StoreError(fmt::format("database {}: run {} does not exist", path(), run_id));
}

std::vector<int64_t> RunStore::mark_stale_runs(std::optional<double> heartbeat_timeout_s) {
  std::lock_guard lock(mutex_);
  const std::string host = base::host_name();
  return conn_->write_transaction([&] {
    struct Candidate {
      int64_t id, pid, start;
      std::string host;
      double last_update;
    };
    std::vector<Candidate> running;
    {
      auto st = conn_->prepare(
          "SELECT id, writer_pid, writer_start, writer_host, last_update FROM runs "
          "WHERE status = 'running' ORDER BY id");
      while (st.step()) running.push_back({st.i64(0), st.i64(1), st.i64(2), st.text(3), st.f64(4)});
    }
    const double now = store::unix_now();
    std::vector<int64_t> marked;
    auto mark = conn_->prepare(
        "UPDATE runs SET status = 'failed', error = ?2, finished_at = ?3 WHERE id = ?1");
    for (const auto& c : running) {
      std::string why;
      if (c.host == host) {
        if (!store::process_alive(c.pid, c.start))
          why =
              fmt::format("writer process {} on {} ended without finishing the run", c.pid, c.host);
      } else if (heartbeat_timeout_s && now - c.last_update > *heartbeat_timeout_s) {
        why = fmt::format("no write from {} (pid {}) for {:.0f} s", c.host, c.pid,
                          now - c.last_update);
      }
      if (why.empty()) continue;
      mark.bind(c.id, why + " (marked by mark_stale_runs)", c.last_update).run();
      marked.push_back(c.id);
    }
    return marked;
  });
}

std::vector<int64_t> RunStore::fail_running_runs(const std::string& name, double since,
                                                 const std::string& why) {
  std::lock_guard lock(mutex_);
  return conn_->write_transaction([&] {
    std::vector<int64_t> ids;
    auto find = conn_->prepare(
        "SELECT id FROM runs WHERE status = 'running' AND name = ?1 AND started_at >= ?2 "
        "ORDER BY id");
    find.bind(name, since);
    while (find.step()) ids.push_back(find.i64(0));
    auto mark = conn_->prepare(
        "UPDATE runs SET status = 'failed', error = ?2, finished_at = ?3, last_update = ?3 "
        "WHERE id = ?1");
    for (int64_t id : ids) mark.bind(id, why, store::unix_now()).run();
    return ids;
  });
}

int64_t RunStore::data_version() {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare("PRAGMA data_version");
  return st.step() ? st.i64(0) : 0;
}

std::string RunStore::integrity_check() {
  std::lock_guard lock(mutex_);
  auto st = conn_->prepare("PRAGMA integrity_check");
  std::string out;
  while (st.step()) {
    if (!out.empty()) out += '\n';
    out += st.text(0);
  }
  return out;
}

}  // namespace hybrid::profiler
