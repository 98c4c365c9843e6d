#include "bench/compare/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace hybrid::bench {

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("{}: cannot create folder {}: {}", path.string(), parent.string(), ec.message()));
  }
  // The pid keeps two concurrent writers (two CI jobs) from sharing a temporary file.
  const fs::path tmp = parent / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw std::runtime_error(fmt::format("{}: cannot write temporary file {}: {}", path.string(),
                                           tmp.string(), std::strerror(errno)));
    }
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw std::runtime_error(fmt::format("{}: writing failed (disk full?)", path.string()));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error(fmt::format("{}: cannot move the written file into place: {}",
                                         path.string(), ec.message()));
  }
}

}  // namespace hybrid::bench
