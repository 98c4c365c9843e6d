#include "profiler/store/schema.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "profiler/store/connection.h"
#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

namespace {

const std::array<Migration, kSchemaVersion>& all_migrations() {
  static const std::array<Migration, kSchemaVersion> kMigrations = {{
      {1, "runs, ranks, steps, modules, layer stats, comm stats, memory, events", kSchemaV1},
      {2, "sweeps, trials, pruned candidates, probes", kSchemaV2},
      {3, "run source, GPU record scopes, host layer times, GPU timeline", kSchemaV3},
      {4, "wall-clock step timers; recomputation times and FLOPs in layer stats", kSchemaV4},
      {5, "trial step-time dispersion, noisy flag and attempts; tie-break confirmation runs",
       kSchemaV5},
      {6, "rank placement and host resources; collective statistics per link class; node_failure",
       schema_v6()},
      {7, "ranks of each probe sample and of the probe's GEMM measurement; the host's CPUs",
       kSchemaV7},
      {8, "collective statistics per communicator group; pipeline stage per rank; bubble per step",
       kSchemaV8},
      {9, "run status diverged", schema_v9()},
      {10, "generation runs: latency percentiles, tokens/s, rollout breakdown", kSchemaV10},
  }};
  return kMigrations;
}

int64_t count_user_tables(Connection& conn) {
  auto st = conn.prepare(
      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  return st.step() ? st.i64(0) : 0;
}

// Identity and version checks shared by both modes.
int check_identity(Connection& conn) {
  const int64_t version = conn.pragma_int("user_version");
  const int64_t app_id = conn.pragma_int("application_id");
  if (app_id != 0 && app_id != kApplicationId)
    throw StoreError(fmt::format("database {} is not a hybrid run store (application_id {:#x})",
                                 conn.path(), app_id));
  if (version > kSchemaVersion)
    throw StoreError(fmt::format(
        "database {} has schema version {}, newer than this build supports ({}); upgrade hybrid",
        conn.path(), version, kSchemaVersion));
  if (version < 0)
    throw StoreError(
        fmt::format("database {} has an invalid schema version {}", conn.path(), version));
  if (version == 0 && count_user_tables(conn) > 0)
    throw StoreError(
        fmt::format("database {} is not a hybrid run store (it has tables but no schema version)",
                    conn.path()));
  return int(version);
}

}  // namespace

std::span<const Migration> migrations() { return all_migrations(); }

int prepare_schema(Connection& conn) {
  const int found = check_identity(conn);
  if (conn.read_only()) {
    if (found == 0)
      throw StoreError(fmt::format("database {} is empty: no hybrid run store in it", conn.path()));
    if (found < kSchemaVersion)
      throw StoreError(fmt::format(
          "database {} has schema version {}, older than this build ({}); it cannot be migrated "
          "read-only: open it read-write once (hybrid-prof migrate --db {})",
          conn.path(), found, kSchemaVersion, conn.path()));
    return found;
  }
  if (found == kSchemaVersion) return found;
  // SQLite's way to rebuild a table others point at (v9 rebuilds `runs`): foreign
  // keys off around the transaction (the pragma is ignored inside one), so that
  // dropping the old table deletes nothing by cascade, and every reference
  // checked before the commit.
  conn.exec("PRAGMA foreign_keys = OFF");
  struct KeysBackOn {
    Connection& conn;
    ~KeysBackOn() {
      try {
        conn.exec("PRAGMA foreign_keys = ON");
      } catch (const StoreError&) {  // unwinding already, or the connection is lost
      }
    }
  } keys_back_on{conn};
  conn.write_transaction([&] {
    // Another process may have migrated between the check and the lock.
    const int now = check_identity(conn);
    for (const Migration& m : all_migrations()) {
      if (m.version <= now) continue;
      conn.exec(m.sql);
      conn.exec(fmt::format("PRAGMA user_version = {}", m.version));
    }
    conn.exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    if (auto bad = conn.prepare("PRAGMA foreign_key_check"); bad.step())
      throw StoreError(fmt::format("database {}: migration left a dangling reference in {}",
                                   conn.path(), bad.text(0)));
  });
  return found;
}

}  // namespace hybrid::profiler::store
