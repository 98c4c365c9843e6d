// Checks of where a tool will write, made before the work that produces the
// output (a training run checks its checkpoint folder and export file before
// the first step, not after the last). Each returns "" when the path will be
// writable, else the reason, without the path (callers name the option and path).
#pragma once

#include <filesystem>
#include <string>

namespace hybrid::base {

// `dir` is a directory this process can create entries in, or can be created
// (its nearest existing ancestor is a directory that can). Creates nothing that
// stays: writability is tried by making and removing an entry, the one test
// that holds for root, read-only mounts and /proc alike.
std::string why_not_writable_dir(const std::filesystem::path& dir);

// `file` can be written by renaming a temporary over it (base/atomic_file.h):
// it is not a directory and its folder passes why_not_writable_dir.
std::string why_not_writable_file(const std::filesystem::path& file);

}  // namespace hybrid::base
