// The floors the trace importer is measured against (bench_import): reading a
// trace's bytes the way the importer reads them (zlib's gzread, which reads
// plain files too, 1 MiB at a time), parsing them with a SAX handler that keeps
// nothing, and parsing them into a DOM (the memory reference). Each throws
// std::runtime_error when the file cannot be read or parsed.
#pragma once

#include <cstdint>
#include <filesystem>

namespace hybrid::bench {

void read_bytes(const std::filesystem::path& path);
void sax_noop(const std::filesystem::path& path);
// The DOM's number of traceEvents.
uint64_t dom_parse(const std::filesystem::path& path);

}  // namespace hybrid::bench
