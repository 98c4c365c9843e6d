// The checkpoint harness's input format, shared with the regression tests:
// meta.json, a separator line, then the bytes of partition_00000.bin (also written
// as partition_00001.bin, so a meta naming two ranks reads two files).
// unpack_checkpoint_input writes DIR/latest ("t"), DIR/t/meta.json and the
// partitions.
#pragma once

#include <filesystem>
#include <fstream>
#include <string_view>

namespace hybrid::fuzz {

inline constexpr std::string_view kPartitionSeparator = "\n@@partition@@\n";

inline void unpack_checkpoint_input(std::string_view input, const std::filesystem::path& dir) {
  const size_t cut = input.find(kPartitionSeparator);
  const std::string_view meta = input.substr(0, cut);
  const std::string_view part = cut == std::string_view::npos
                                    ? std::string_view()
                                    : input.substr(cut + kPartitionSeparator.size());
  std::filesystem::create_directories(dir / "t");
  auto put = [](const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), std::streamsize(bytes.size()));
  };
  put(dir / "latest", "t\n");
  put(dir / "t" / "meta.json", meta);
  put(dir / "t" / "partition_00000.bin", part);
  put(dir / "t" / "partition_00001.bin", part);
}

}  // namespace hybrid::fuzz
