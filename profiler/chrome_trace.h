// Chrome Trace Event Format export (opens in Perfetto and chrome://tracing): one
// complete event ("ph":"X", ts/dur in µs) per profiler Event, pid = rank, tid =
// lane, with metadata events naming each process ("rank N") and lane ("compute",
// "comm", "gpu stream K"). Built with nlohmann::json; written atomically.
#pragma once

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string_view>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

// "otherData.generator" of every trace we write: the importer recognises our own
// export by it (its run is already in a store; it is not a PyTorch trace).
inline constexpr std::string_view kChromeTraceGenerator = "hybrid-prof";

std::string lane_name(uint16_t lane);  // "compute", "comm", "gpu stream 0", "lane 3"

// modules name Event::module_id in the args; ranks, when every rank of the events
// is among them, align the ranks' tracer clocks by their epoch_unix_ns; run (may be
// null) fills "otherData". Complete events come sorted by ts, after the metadata.
nlohmann::json chrome_trace(const EventSet& events, std::span<const ModuleInfo> modules = {},
                            std::span<const RankInfo> ranks = {}, const RunInfo* run = nullptr);

// Writes `trace` to path through a temporary file and a rename: a reader never
// sees half a file. Throws std::runtime_error naming the path.
void write_chrome_trace(const std::filesystem::path& path, const nlohmann::json& trace);

}  // namespace hybrid::profiler
