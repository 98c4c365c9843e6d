// Writing output files so that a reader never sees half of one: write a temporary
// file beside the target, then rename it over the target (atomic on POSIX).
#pragma once

#include <filesystem>
#include <string_view>

namespace hybrid::bench {

// Creates missing parent folders. Throws std::runtime_error naming the path on
// failure; the temporary file is removed and the target left as it was.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace hybrid::bench
