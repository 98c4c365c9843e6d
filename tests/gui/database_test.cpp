// The viewer's database handle: clear messages (never exceptions) for a missing
// file, a file that is not SQLite and a newer schema; nothing written, ever
// (checksums before and after); and the change check that follows a store
// another process is writing.
#include "gui/model/database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

using test::FixtureRunSpec;
using test::FixtureWriter;
using test::TempDir;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Database, MissingFileIsAMessage) {
  TempDir dir;
  const auto path = dir / "nope.db";
  Database db(path);
  EXPECT_FALSE(db.is_open());
  EXPECT_TRUE(contains(db.error(), path)) << db.error();
  EXPECT_TRUE(contains(db.error(), "no such file")) << db.error();
  EXPECT_FALSE(std::filesystem::exists(path));  // not created
  EXPECT_FALSE(db.refresh(true));
  EXPECT_FALSE(db.load_run(1).has_value());
}

TEST(Database, NonSqliteFileIsAMessageAndUntouched) {
  TempDir dir;
  const auto path = dir / "notes.db";
  {
    std::ofstream out(path);
    out << "these are my notes, not a database\n";
  }
  const uint64_t before = test::file_checksum(path);
  Database db(path);
  EXPECT_FALSE(db.is_open());
  EXPECT_TRUE(contains(db.error(), "not a SQLite database")) << db.error();
  EXPECT_TRUE(contains(db.error(), path)) << db.error();
  EXPECT_EQ(test::file_checksum(path), before);
}

TEST(Database, NewerSchemaIsAMessageAndUntouched) {
  TempDir dir;
  const auto path = dir / "future.db";
  { profiler::RunStore store(path); }
  profiler::test::exec_sql(path, "PRAGMA user_version = 99");
  const uint64_t before = test::file_checksum(path);
  Database db(path);
  EXPECT_FALSE(db.is_open());
  EXPECT_TRUE(contains(db.error(), "schema version 99")) << db.error();
  EXPECT_TRUE(contains(db.error(), "upgrade")) << db.error();
  EXPECT_EQ(test::file_checksum(path), before);
  EXPECT_EQ(profiler::test::query_sql(path, "PRAGMA user_version"), "99");
}

TEST(Database, ReadsWithoutWriting) {
  test::FixtureDb fx;
  // Fold the WAL into the main file so the checksum covers every row.
  profiler::test::exec_sql(fx.path, "PRAGMA wal_checkpoint(TRUNCATE)");
  const uint64_t before = test::file_checksum(fx.path);
  const auto mtime = std::filesystem::last_write_time(fx.path);
  {
    Database db(fx.path);
    ASSERT_TRUE(db.is_open()) << db.error();
    EXPECT_EQ(db.runs().size(), 5u);
    ASSERT_EQ(db.sweeps().size(), 1u);
    EXPECT_EQ(db.trials(db.sweeps()[0].id).size(), 6u);
    EXPECT_EQ(db.pruned(db.sweeps()[0].id).size(), 2u);
    for (const auto& r : db.runs()) {
      auto data = db.load_run(r.id);
      ASSERT_TRUE(data.has_value()) << db.error();
      EXPECT_EQ(data->profile.run.id, r.id);
      EXPECT_GT(data->events.events.size(), 0u);
    }
    EXPECT_FALSE(db.load_run(999).has_value());
    EXPECT_TRUE(contains(db.error(), "999")) << db.error();
    EXPECT_TRUE(db.refresh(true));
  }
  EXPECT_EQ(test::file_checksum(fx.path), before);
  EXPECT_EQ(std::filesystem::last_write_time(fx.path), mtime);
  EXPECT_EQ(profiler::RunStore(fx.path, profiler::OpenMode::read_only).integrity_check(), "ok");
}

TEST(Database, FollowsAStoreThatIsBeingWritten) {
  TempDir dir;
  const auto path = dir / "live.db";
  profiler::RunStore writer(path);  // stays open: the sweep is still running
  FixtureWriter fw(writer);
  FixtureRunSpec spec;
  spec.world_size = 1;
  spec.profiled_steps = {2};
  spec.steps = 3;
  const auto first = fw.write_run(spec);
  Database db(path);
  ASSERT_TRUE(db.is_open()) << db.error();
  ASSERT_EQ(db.runs().size(), 1u);
  const int64_t gen = db.generation();
  EXPECT_FALSE(db.refresh());  // nothing new: no query, same lists
  EXPECT_EQ(db.generation(), gen);
  auto data = db.load_run(first.run_id);
  ASSERT_TRUE(data.has_value());
  EXPECT_FALSE(db.run_changed(*data));

  // A second run appears, and the first one gets a new step.
  fw.write_run(spec);
  std::vector<profiler::StepRow> more{{4, 3.0, 1e-4, 1, false, 1.0, 25.0, 1000, 1e9}};
  writer.add_steps(first.run_id, more);
  EXPECT_TRUE(db.refresh());
  EXPECT_GT(db.generation(), gen);
  EXPECT_EQ(db.runs().size(), 2u);
  EXPECT_TRUE(db.run_changed(*data));
  const auto fresh = db.load_run(first.run_id);
  EXPECT_EQ(fresh->profile.steps.size(), 4u);
  EXPECT_FALSE(db.run_changed(*fresh));
  EXPECT_FALSE(db.refresh());
}

// A commit that leaves both files as they were to a clock and a size: a row
// changed in place, the WAL checkpointed back to empty, and the files' mtimes
// set back. A check by mtime and size misses it; SQLite's data_version does not.
TEST(Database, SeesACommitThatChangesNeitherFileSizeNorMtime) {
  TempDir dir;
  const auto path = dir / "still.db";
  {
    profiler::RunStore writer(path);
    FixtureWriter fw(writer);
    FixtureRunSpec spec;
    spec.world_size = 1;
    spec.steps = 2;
    fw.write_run(spec);
  }
  Database db(path);
  ASSERT_TRUE(db.is_open()) << db.error();
  ASSERT_EQ(db.runs().size(), 1u);
  const std::string name_before = db.runs()[0].name;
  const auto wal = std::filesystem::path(path + "-wal");
  auto size_of = [](const std::filesystem::path& p) {
    return std::filesystem::exists(p) ? std::filesystem::file_size(p) : uintmax_t(0);
  };
  const auto main_size = size_of(path), wal_size = size_of(wal);
  const bool wal_existed = std::filesystem::exists(wal);
  const auto main_mtime = std::filesystem::last_write_time(path);

  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE runs SET name = 'renamed'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  std::filesystem::last_write_time(path, main_mtime);
  if (std::filesystem::exists(wal)) std::filesystem::last_write_time(wal, main_mtime);
  ASSERT_EQ(size_of(path), main_size) << "the update changed the file's size";
  ASSERT_EQ(std::filesystem::exists(wal), wal_existed);
  ASSERT_EQ(size_of(wal), wal_size) << "the checkpoint left the WAL another size";

  EXPECT_TRUE(db.refresh());
  ASSERT_EQ(db.runs().size(), 1u);
  EXPECT_NE(name_before, "renamed");
  EXPECT_EQ(db.runs()[0].name, "renamed");
}

}  // namespace
}  // namespace hybrid::gui
