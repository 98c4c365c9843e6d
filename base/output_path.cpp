#include "base/output_path.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hybrid::base {

namespace fs = std::filesystem;

namespace {

// "" when an entry can be made in the existing directory `dir`.
std::string try_entry_in(const fs::path& dir) {
  const fs::path probe = dir / fmt::format(".hybrid-write-test.{}", ::getpid());
  if (::mkdir(probe.c_str(), 0700) != 0 && errno != EEXIST) return std::strerror(errno);
  ::rmdir(probe.c_str());
  return "";
}

}  // namespace

std::string why_not_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  const bool is_self = existing == dir;
  if (!fs::is_directory(existing, ec))
    return is_self ? "it exists and is not a directory"
                   : fmt::format("cannot create it: {} is not a directory", existing.string());
  if (const std::string why = try_entry_in(existing); !why.empty())
    return is_self ? fmt::format("cannot write into it: {}", why)
                   : fmt::format("cannot create it in {}: {}", existing.string(), why);
  return "";
}

std::string why_not_writable_file(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) return "it is a directory";
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (const std::string why = why_not_writable_dir(folder); !why.empty())
    return fmt::format("its folder {}: {}", folder.string(), why);
  return "";
}

}  // namespace hybrid::base
