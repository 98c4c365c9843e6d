// Atomic file writes: the target appears only on commit, with the whole content;
// an abandoned writer leaves the old file and no temporary; folders are created;
// failures name the path.
#include "base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/base/base_test_util.h"

namespace hybrid::base {
namespace {

namespace fs = std::filesystem;

using test::read;
using test::TempDir;

size_t entries(const fs::path& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A target in `d` that holds "old".
fs::path old_target(const TempDir& d) {
  const auto target = d.path / "out.json";
  std::ofstream(target) << "old";
  return target;
}

TEST(AtomicFile, TargetAppearsWholeOnlyAtCommit) {
  TempDir d;
  const auto target = old_target(d);
  {
    AtomicFileWriter w(target.string());
    w.write("new ");
    w.write("content");
    EXPECT_EQ(read(target), "old");  // readers still see the old file
    EXPECT_EQ(entries(d.path), 2u);  // the target and the temporary
    w.commit();
  }
  EXPECT_EQ(read(target), "new content");
  EXPECT_EQ(entries(d.path), 1u);
}

TEST(AtomicFile, WithoutCommitTheOldFileStaysAndNoTemporaryIsLeft) {
  TempDir d;
  const auto target = old_target(d);
  {
    AtomicFileWriter w(target.string());
    w.write("half");
  }
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(entries(d.path), 1u);
}

// A pid that no process has now: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(AtomicFile, AKilledWritersTemporaryIsRemovedByTheNextWriterOfThatTarget) {
  TempDir d;
  const auto target = d.path / "part.bin";
  const auto dead = d.path / ("part.bin.tmp." + std::to_string(dead_pid()) + ".0");
  const auto live = d.path / ("part.bin.tmp." + std::to_string(::getpid()) + ".99");
  const auto other = d.path / ("other.bin.tmp." + std::to_string(dead_pid()) + ".0");
  for (const auto& p : {dead, live, other}) std::ofstream(p) << "leftover";
  write_file_atomic(target, "new");
  EXPECT_EQ(read(target), "new");
  EXPECT_FALSE(fs::exists(dead)) << "a dead writer's temporary of this target stays";
  EXPECT_TRUE(fs::exists(live)) << "a live process's temporary must stay";
  EXPECT_TRUE(fs::exists(other)) << "another target's temporary is not this writer's business";
}

TEST(AtomicFile, CreatesFoldersAndNamesThePathOnFailure) {
  TempDir d;
  write_file_atomic(d.path / "a/b/c.txt", "x");
  EXPECT_EQ(read(d.path / "a/b/c.txt"), "x");
  std::ofstream(d.path / "file") << "not a folder";
  try {
    write_file_atomic(d.path / "file/c.txt", "x");
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find((d.path / "file/c.txt").string()), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hybrid::base
