// Shared by the fuzz harnesses (libFuzzer with clang, or the gcc corpus replay):
// a private scratch directory per process, writing the input there as a file
// (every reader under test takes a path), and the check that an error is the
// reader's own named one. Anything else (another exception type, a message that
// does not name the input) aborts, which libFuzzer and the replay test report.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace hybrid::fuzz {

// $HYBRID_FUZZ_TMP, else /dev/shm (no disk writes per input), else the system's
// temporary directory; one subdirectory per process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::filesystem::path root = std::filesystem::temp_directory_path();
      if (const char* env = std::getenv("HYBRID_FUZZ_TMP"))
        root = env;
      else if (std::filesystem::is_directory("/dev/shm"))
        root = "/dev/shm";
      path = root / ("hybrid-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

inline void write_bytes(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// Writes the input to scratch_dir()/name and returns that path.
inline std::string write_input(std::string_view name, const uint8_t* data, size_t size) {
  const auto path = scratch_dir() / name;
  write_bytes(path, data, size);
  return path.string();
}

// The reader threw its named error: it must also say what it read.
// HYBRID_FUZZ_SHOW=1 prints it (to check that seeds are accepted).
inline void expect_mentions(const std::exception& e, std::string_view needle) {
  if (std::getenv("HYBRID_FUZZ_SHOW")) std::fprintf(stderr, "  named error: %s\n", e.what());
  if (std::string_view(e.what()).find(needle) == std::string_view::npos) {
    std::fprintf(stderr, "fuzz: error does not name '%.*s': %s\n", int(needle.size()),
                 needle.data(), e.what());
    std::abort();
  }
}

}  // namespace hybrid::fuzz
