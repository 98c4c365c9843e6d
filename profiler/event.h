// The one event record every sink consumes: CPU scopes, collectives, NVTX-mirrored
// ranges and CUPTI kernel records all become Events. Fixed size (48 bytes), names
// interned once, so a profiled step costs a few appends per module.
#pragma once

#include <cstdint>
#include <string_view>

namespace hybrid::profiler {

enum class Category : uint8_t {
  step = 0,       // one optimizer step (all micro-steps)
  forward = 1,    // a module's forward
  backward = 2,   // a module's backward
  optimizer = 3,  // unscale, clip, AdamW, parameter all-gather
  comm = 4,       // one collective, on the communication lane
  data = 5,       // batch loading
  kernel = 6,     // a GPU kernel (CUPTI)
  memcpy = 7,     // a GPU memcpy/memset (CUPTI)
  other = 8,
  recompute = 9,  // a module's forward run again in backward (activation checkpointing)
  prefill = 10,   // generation: one prompt's forward over its tokens
  decode = 11,    // generation: one step of every row's next token
};
constexpr int kCategoryCount = 12;

std::string_view category_name(Category c);
Category parse_category(std::string_view name);  // throws std::invalid_argument

// Standard lanes of a rank; GPU streams get lanes from kLaneGpuBase up.
enum Lane : uint16_t { kLaneCompute = 0, kLaneComm = 1, kLaneGpuBase = 8 };

struct Event {
  int64_t start_ns = 0;  // since the tracer's epoch (steady clock)
  int64_t dur_ns = 0;
  uint64_t bytes = 0;    // bytes moved (collectives, memcpy) or touched
  uint64_t flops = 0;    // floating-point operations done inside this event
  uint32_t name_id = 0;  // interned in the tracer's name table
  int32_t step = -1;
  int32_t module_id = -1;  // index into the model's module table; -1 when none
  uint16_t rank = 0;
  uint16_t lane = kLaneCompute;
  Category category = Category::other;
  // GPU records (kernel, memcpy): the category of the CPU scope that launched
  // them (forward, backward, optimizer, ...); `other` when unknown or not GPU.
  Category scope = Category::other;
};

}  // namespace hybrid::profiler
