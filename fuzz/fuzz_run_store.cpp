// The run store opened from an arbitrary file, as hybrid-prof and hybrid-view
// do: read-only open (SQLite header, schema version check), then the reads they
// make: runs, each run's profile and events, sweeps with their trials and pruned
// candidates, the latest probe. The only error allowed is StoreError naming the
// file (SQLite's own "file is not a database" included).
#include <filesystem>

#include "fuzz/fuzz_support.h"
#include "profiler/store/run_store.h"

namespace {

void read_everything(const std::string& path) {
  using namespace hybrid::profiler;
  RunStore store(path, OpenMode::read_only);
  const auto runs = store.list_runs();
  for (size_t i = 0; i < runs.size() && i < 4; ++i) {
    (void)store.load_profile(runs[i].id);
    (void)store.events(runs[i].id);
    (void)store.event_count(runs[i].id);
  }
  const auto sweeps = store.sweeps();
  for (size_t i = 0; i < sweeps.size() && i < 4; ++i) {
    (void)store.trials(sweeps[i].id);
    (void)store.pruned(sweeps[i].id);
  }
  (void)store.latest_probe();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hybrid::fuzz::write_input("hybrid.db", data, size);
  try {
    read_everything(path);
  } catch (const hybrid::profiler::StoreError& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  // A read-only open of a WAL database leaves its -shm (and -wal) behind.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix);
  return 0;
}
