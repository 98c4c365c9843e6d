// The column tables (profiler/columns.h) against the schema the migrations
// build: every stored column of every table is in its row's column table or
// one of the keys the store binds itself, no column of a table is missing from
// the store, and each column's declared type and NULL-ability fit its member.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include "profiler/generation_columns.h"
#include "profiler/profile_columns.h"
#include "profiler/store/run_store.h"
#include "profiler/sweep_columns.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

template <class T>
constexpr bool is_optional = false;
template <class T>
constexpr bool is_optional<std::optional<T>> = true;

// The declared type that holds a T.
template <class T>
std::string sql_type() {
  if constexpr (is_optional<T>)
    return sql_type<typename T::value_type>();
  else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, RunStatus> ||
                     std::is_same_v<T, SweepStatus> || std::is_same_v<T, TrialStatus> ||
                     std::is_same_v<T, GenerationKind>)
    return "TEXT";
  else if constexpr (std::is_floating_point_v<T>)
    return "REAL";
  else
    return "INTEGER";
}

struct StoredColumn {
  std::string type;
  bool not_null = false;
};

std::map<std::string, StoredColumn> stored_columns(const std::filesystem::path& db,
                                                   const std::string& table) {
  std::map<std::string, StoredColumn> out;
  std::istringstream rows(test::query_sql(
      db, "SELECT name, type, \"notnull\" FROM pragma_table_info('" + table + "')"));
  for (std::string line; std::getline(rows, line);) {
    const auto a = line.find('|'), b = line.rfind('|');
    out[line.substr(0, a)] = {line.substr(a + 1, b - a - 1), line.substr(b + 1) == "1"};
  }
  return out;
}

// `keys`: the table's columns that are not the row's values.
template <class Row>
void expect_table_matches_store(const std::filesystem::path& db, std::set<std::string> keys) {
  const std::string table = columns::Table<Row>::name;
  SCOPED_TRACE(table);
  auto stored = stored_columns(db, table);
  ASSERT_FALSE(stored.empty()) << "no table " << table << " in the store";
  columns::for_each_column<Row>([&](const auto& c) {
    std::string name = c.name;
    name.erase(std::remove(name.begin(), name.end(), '"'), name.end());
    const auto it = stored.find(name);
    if (it == stored.end()) {
      ADD_FAILURE() << "column " << name << " is not in the store's " << table;
      return;
    }
    using T = columns::value_of<decltype(c)>;
    EXPECT_EQ(it->second.type, sql_type<T>()) << name;
    if constexpr (is_optional<T>) {
      EXPECT_FALSE(it->second.not_null) << name << " may be NULL";
    }
    stored.erase(it);
  });
  for (const auto& [name, column] : stored)
    EXPECT_TRUE(keys.erase(name) == 1)
        << "the store's " << table << "." << name << " is in no column table, nor a key";
  EXPECT_TRUE(keys.empty()) << "a key that is not in the store's " << table;
}

TEST(StoreColumns, EveryTableDescribesItsStoredColumnsExactly) {
  test::TempDir dir;
  const auto db = dir / "runs.db";
  { RunStore store(db); }
  expect_table_matches_store<RunInfo>(db, {"id", "writer_start"});
  expect_table_matches_store<RankInfo>(db, {"run_id"});
  expect_table_matches_store<StepRow>(db, {"run_id"});
  expect_table_matches_store<StepRankRow>(db, {"run_id"});
  expect_table_matches_store<StepTimerRow>(db, {"run_id"});
  expect_table_matches_store<ModuleInfo>(db, {"run_id"});
  expect_table_matches_store<LayerStat>(db, {"run_id"});
  expect_table_matches_store<CommStatRow>(db, {"run_id"});
  expect_table_matches_store<MemoryRow>(db, {"run_id"});
  expect_table_matches_store<GpuRankTimeline>(db, {"run_id"});
  expect_table_matches_store<Event>(db, {"run_id", "name_id"});
  expect_table_matches_store<SweepInfo>(db, {"id"});
  expect_table_matches_store<TrialRow>(db, {"id"});
  expect_table_matches_store<TieBreak>(db, {"id"});
  expect_table_matches_store<PrunedCandidate>(db, {"sweep_id"});
  expect_table_matches_store<ProbeResult>(db, {"id"});
  expect_table_matches_store<BandwidthSample>(db, {"probe_id"});
  expect_table_matches_store<GenerationRow>(db, {"id", "run_id"});
}

// Every table the store holds is one of the above (event names aside: the
// events' name table, interned by the store).
TEST(StoreColumns, EveryStoredTableHasAColumnTable) {
  test::TempDir dir;
  const auto db = dir / "runs.db";
  { RunStore store(db); }
  std::set<std::string> described;
  const auto add = [&]<class... Row>() { (described.insert(columns::Table<Row>::name), ...); };
  add.operator()<RunInfo, RankInfo, StepRow, StepRankRow, StepTimerRow, ModuleInfo, LayerStat,
                 CommStatRow, MemoryRow, GpuRankTimeline, Event, SweepInfo, TrialRow, TieBreak,
                 PrunedCandidate, ProbeResult, BandwidthSample, GenerationRow>();
  described.insert("event_names");
  std::istringstream names(test::query_sql(
      db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"));
  std::set<std::string> stored;
  for (std::string name; std::getline(names, name);) stored.insert(name);
  EXPECT_EQ(stored, described);
}

}  // namespace
}  // namespace hybrid::profiler
