// A store that its reader may not write, in a folder it may not write either (a
// colleague's results, a shared read-only folder): the real `hybrid-prof runs`
// reads it, and never shows it without commits that are still in its -wal.
//
// Permission bits do not stop root, and the tests run as root in CI: there the
// reader runs as the unprivileged user nobody through setpriv (util-linux), so
// the kernel refuses its writes as it would a colleague's. As any other user the
// bits alone do it. (A read-only filesystem is the other way here; that case is
// tests/faults/resource_limits_test.cpp's, which needs the rights to mount.)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/run_command.h"
#include "profiler/store/run_store.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

namespace fs = std::filesystem;

const std::string kProf = std::string(HYBRID_BINARY_DIR) + "/profiler/hybrid-prof";
constexpr const char* kSetpriv = "/usr/bin/setpriv";

class ReadOnlyFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kProf)) << kProf;
    if (::geteuid() == 0 && !fs::exists(kSetpriv))
      GTEST_SKIP() << "root ignores permission bits and " << kSetpriv
                   << " (util-linux) is missing to read as another user";
    folder_ = dir_ / "shared";
    fs::create_directory(folder_);
  }
  void TearDown() override {
    std::error_code ec;  // let TempDir remove it when this test is not root
    fs::permissions(folder_, fs::perms(0755), ec);
  }

  // Makes the folder and everything in it read-only, then reads it as a user
  // whom the bits stop.
  hybrid::test::CommandResult read_runs() {
    for (const auto& f : fs::directory_iterator(folder_))
      fs::permissions(f.path(), fs::perms(0444));
    fs::permissions(folder_, fs::perms(0555));
    const std::string as_other =
        ::geteuid() == 0 ? std::string(kSetpriv) + " --reuid=65534 --regid=65534 --clear-groups "
                         : std::string();
    return hybrid::test::run_command(as_other + kProf + " runs --db " +
                                     (folder_ / "hybrid.db").string());
  }

  // A store with run "first" in the file and run "in-wal" committed to its -wal
  // only: `with_shm` says whether the -shm is copied beside it.
  void copy_store_with_commits_in_its_wal(bool with_shm) {
    const fs::path db = dir_ / "live.db";
    {
      RunStore store(db);
      RunInfo first;
      first.name = "first";
      store.create_run(first);
    }  // the last close checkpoints the WAL into the file
    RunStore store(db);
    RunInfo later;
    later.name = "in-wal";
    store.create_run(later);
    ASSERT_GT(fs::file_size(fs::path(db.string() + "-wal")), 0u);
    fs::copy_file(db, folder_ / "hybrid.db");
    fs::copy_file(db.string() + "-wal", folder_ / "hybrid.db-wal");
    if (with_shm) fs::copy_file(db.string() + "-shm", folder_ / "hybrid.db-shm");
  }

  test::TempDir dir_;  // readable by others, as the user who reads the folder needs
  fs::path folder_;
};

// Issue 32: "attempt to write a readonly database (in reading the schema)": SQLite
// wanted to create the -shm file. With no -wal the file holds every commit, and
// the reader opens it immutable.
TEST_F(ReadOnlyFolder, ClosedStoreIsReadImmutable) {
  {
    RunStore store(folder_ / "hybrid.db");
    RunInfo run;
    run.name = "colleague";
    store.create_run(run);
  }
  ASSERT_FALSE(fs::exists(folder_ / "hybrid.db-wal"));
  const auto r = read_runs();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("colleague"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(folder_ / "hybrid.db-shm")) << "the reader wrote beside the store";
}

// With its -shm beside it, a -wal's commits are read (immutable would skip them).
TEST_F(ReadOnlyFolder, CommitsInTheWalAreReadWhenItsShmIsThere) {
  copy_store_with_commits_in_its_wal(/*with_shm=*/true);
  const auto r = read_runs();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("first"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in-wal"), std::string::npos) << r.output;
}

// Without the -shm nothing can read the -wal here: refused, rather than showing
// the store without its last commits.
TEST_F(ReadOnlyFolder, CommitsInAWalWithoutShmAreNotSilentlyDropped) {
  copy_store_with_commits_in_its_wal(/*with_shm=*/false);
  const auto r = read_runs();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("hybrid.db-wal holds commits not yet in the file"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("first"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace hybrid::profiler
