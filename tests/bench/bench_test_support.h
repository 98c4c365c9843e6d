// Shared helpers of the hybrid-bench tests: fixture paths and a scratch folder.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hybrid::bench::testing {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(HYBRID_SOURCE_DIR) / "tests" / "bench" / "fixtures" / name;
}

inline std::filesystem::path bench_binary(const std::string& name) {
  return std::filesystem::path(HYBRID_BINARY_DIR) / "bench" / name;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder under the system temp dir, removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("hybrid-bench-test-" + tag + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace hybrid::bench::testing
