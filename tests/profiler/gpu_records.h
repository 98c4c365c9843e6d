// What the CUPTI side hands the GPU-activity parser, for the tests of the parser
// and of the timeline analysis behind it: activity records and the tracer's
// name interning.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/gpu_activity.h"

namespace hybrid::profiler::test {

// A name table standing in for the tracer's interning.
struct Names {
  std::vector<std::string> names;
  std::function<uint32_t(std::string_view)> fn() {
    return [this](std::string_view n) {
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == n) return uint32_t(i);
      names.emplace_back(n);
      return uint32_t(names.size() - 1);
    };
  }
};

inline GpuActivityRecord gpu_record(GpuActivityKind kind, uint32_t stream, uint64_t start,
                                    uint64_t end, uint32_t correlation, std::string name,
                                    uint64_t bytes = 0) {
  return {.kind = kind,
          .name = std::move(name),
          .device = 0,
          .stream = stream,
          .start_ns = start,
          .end_ns = end,
          .correlation_id = correlation,
          .bytes = bytes};
}

}  // namespace hybrid::profiler::test
