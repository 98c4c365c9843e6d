// A test's own directory under the system's temporary one: made unique
// (mkdtemp), readable by other users as a plain directory is (tests that drop
// privileges look inside), removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace hybrid::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hybrid_test_XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("TempDir: mkdtemp failed under " +
                               std::filesystem::temp_directory_path().string());
    path_ = pattern;
    std::filesystem::permissions(
        path_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                   std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                   std::filesystem::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // A path inside, as the string a command line or an API takes.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace hybrid::test
