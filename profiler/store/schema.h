// The run store's schema: one migration per version (PRAGMA user_version), applied
// in order inside one write transaction each. docs/schema.md documents every table.
// A migration, once released, never changes: add a new version instead.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace hybrid::profiler::store {

class Connection;

constexpr int kSchemaVersion = 10;
constexpr int32_t kApplicationId = 0x48594252;  // "HYBR": PRAGMA application_id of our files

struct Migration {
  int version;          // user_version after it ran
  const char* summary;  // one line for docs and errors
  std::string sql;
};

std::span<const Migration> migrations();  // versions 1..kSchemaVersion, in order

// Read-write: creates or upgrades the schema to kSchemaVersion (concurrent openers
// are safe: the version is re-read under the write lock). Read-only: only checks,
// and refuses an older version rather than migrate. Either way refuses a newer
// version and a SQLite file that is not a run store. Returns the version found.
int prepare_schema(Connection& conn);

}  // namespace hybrid::profiler::store
