// Atomic file writes: the target appears only on commit, with the whole content;
// an abandoned writer leaves the old file and no temporary; folders are created;
// failures name the path.
#include "base/atomic_file.h"

#include <gtest/gtest.h>

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

TEST(AtomicFile, TargetAppearsWholeOnlyAtCommit) {
  TempDir d;
  const auto target = d.path / "out.json";
  std::ofstream(target) << "old";
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
  const auto target = d.path / "out.json";
  std::ofstream(target) << "old";
  {
    AtomicFileWriter w(target.string());
    w.write("half");
  }
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(entries(d.path), 1u);
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
