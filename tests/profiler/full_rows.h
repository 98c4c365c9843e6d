// Rows of the profile with every field set, none at its default and several
// beyond 32 bits, for the tests of what carries them whole (the rank-rows wire
// encoding, the store's round trips), and the field-by-field check of events.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "profiler/event.h"
#include "profiler/profile_data.h"

namespace hybrid::profiler::test {

inline LayerStat full_layer_stat(int rank, int32_t module_id, int64_t step) {
  LayerStat l;
  l.rank = rank, l.module_id = module_id, l.step = step, l.fwd_ns = 11, l.bwd_ns = 22;
  l.fwd_flops = 5'000'000'000ull, l.bwd_flops = 10'000'000'000ull, l.fwd_macs = 33;
  l.bwd_macs = 44, l.calls = 2, l.host_fwd_ns = 55, l.host_bwd_ns = 66, l.recompute_ns = 77;
  l.recompute_flops = 88, l.host_recompute_ns = 99;
  return l;
}

inline GpuRankTimeline full_gpu_timeline(int rank) {
  GpuRankTimeline g;
  g.rank = rank, g.first_start_ns = 100, g.last_end_ns = 900, g.span_ns = 800, g.idle_ns = 50;
  g.compute_ns = 600, g.non_compute_ns = 150, g.comm_ns = 200, g.memory_ns = 30;
  g.comm_overlap_ns = 120, g.exposed_comm_ns = 80;
  for (int i = 0; i < kGpuWorkMasks; ++i) g.exclusive_ns[size_t(i)] = 10 * (i + 1);
  g.exclusive_ns[0] = g.idle_ns;  // the same time: sent once, as the store keeps it
  g.computation_kernels = 17, g.communication_kernels = 5, g.memory_records = 3;
  return g;
}

// A collective of a backward pass.
inline Event full_event(uint16_t rank, int32_t module_id, int32_t step, uint32_t name_id) {
  Event a;
  a.start_ns = 1000, a.dur_ns = 250, a.bytes = 1ull << 33, a.flops = 1ull << 40;
  a.name_id = name_id, a.step = step, a.module_id = module_id, a.rank = rank;
  a.lane = kLaneComm, a.category = Category::comm, a.scope = Category::backward;
  return a;
}

// Every field of event `i` but its name id: ids index each side's own name table.
inline void expect_event_fields(const Event& got, const Event& want, size_t i) {
  EXPECT_EQ(got.start_ns, want.start_ns) << i;
  EXPECT_EQ(got.dur_ns, want.dur_ns) << i;
  EXPECT_EQ(got.bytes, want.bytes) << i;
  EXPECT_EQ(got.flops, want.flops) << i;
  EXPECT_EQ(got.step, want.step) << i;
  EXPECT_EQ(got.module_id, want.module_id) << i;
  EXPECT_EQ(got.rank, want.rank) << i;
  EXPECT_EQ(got.lane, want.lane) << i;
  EXPECT_EQ(got.category, want.category) << i;
  EXPECT_EQ(got.scope, want.scope) << i;
}

}  // namespace hybrid::profiler::test
