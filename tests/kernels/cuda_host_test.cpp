// Host-side logic of the CUDA backend, checked without a GPU: launch
// configurations (simulated grid-stride coverage), the caching allocator's
// size classes, reuse, statistics and out-of-memory path (over real host memory
// as its upstream), GEMM plan keys and dtype mapping, and backend selection
// (auto falls back to the CPU with a note; "cuda" without a device throws).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/sign_tiles.h"
#include "kernels/registry.h"

#if HYBRID_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/gemm.h"
#endif

namespace hybrid::kernels {
namespace {

using namespace cuda;

// Visits of each index by a grid-stride loop with this configuration.
std::vector<int> simulate_grid_stride(const LaunchConfig& c, size_t n) {
  std::vector<int> visits(n, 0);
  for (size_t b = 0; b < c.grid; ++b)
    for (size_t t = 0; t < c.block; ++t)
      for (size_t i = b * c.block + t; i < n; i += size_t(c.grid) * c.block) ++visits[i];
  return visits;
}

// The sign-compression kernels' tiles: thread t of a tile takes the 8 values
// from begin + 8t (those below the extent); every value of every tensor is
// taken exactly once, each thread's 8 start at a multiple of 8 (one byte of
// packed signs, never across a chunk), and first_tile brackets each tensor's.
TEST(CudaSignTiles, EveryValueOnceInWholeBytesTensorByTensor) {
  const std::vector<size_t> extents = {0, 8, kSignTile, kSignTile + 8, 6001, 16, 0, 3 * kSignTile};
  const SignTilePlan plan = sign_tile_plan(extents);
  ASSERT_EQ(plan.first_tile.size(), extents.size() + 1);
  for (size_t k = 0; k < extents.size(); ++k) {
    std::vector<int> visits(extents[k], 0);
    for (uint32_t i = plan.first_tile[k]; i < plan.first_tile[k + 1]; ++i) {
      const SignTile& tile = plan.tiles[i];
      ASSERT_EQ(tile.tensor, k);
      ASSERT_LE(tile.len, kSignTile);
      for (size_t t = 0; t < kSignThreads && 8 * t < tile.len; ++t) {
        const size_t i0 = tile.begin + 8 * t;
        EXPECT_EQ(i0 % 8, 0u);
        for (size_t v = i0; v < i0 + 8 && v < extents[k]; ++v) ++visits[v];
      }
    }
    for (size_t v = 0; v < extents[k]; ++v)
      ASSERT_EQ(visits[v], 1) << "tensor " << k << " value " << v;
    EXPECT_EQ(plan.first_tile[k + 1] - plan.first_tile[k],
              (extents[k] + kSignTile - 1) / kSignTile);
  }
  EXPECT_EQ(plan.first_tile.back(), plan.tiles.size());
}

TEST(CudaLaunchConfig, GridStrideCoversEveryElementOnce) {
  for (size_t n : {size_t(1), size_t(31), size_t(256), size_t(257), size_t(5000), size_t(70001)}) {
    for (unsigned max_grid : {1u, 3u, 64u, 65536u}) {
      const LaunchConfig c = launch_config(n, 128, max_grid);
      ASSERT_GE(c.grid, 1u);
      EXPECT_LE(c.grid, max_grid);
      EXPECT_EQ(c.block, 128u);
      EXPECT_GE(size_t(c.grid) * c.block * c.per_thread, n);
      const auto v = simulate_grid_stride(c, n);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(v[i], 1) << "n=" << n << " max_grid=" << max_grid << " i=" << i;
    }
  }
  EXPECT_EQ(launch_config(0).grid, 0u);  // nothing to launch
  // Large n: capped grid, the loop does the rest.
  const LaunchConfig big = launch_config(size_t(1) << 33, 256, 8192);
  EXPECT_EQ(big.grid, 8192u);
  EXPECT_EQ(big.per_thread, (size_t(1) << 33) / (8192 * 256));
  EXPECT_THROW(launch_config(10, 100), std::invalid_argument);   // not a warp multiple
  EXPECT_THROW(launch_config(10, 2048), std::invalid_argument);  // over 1024
}

TEST(CudaLaunchConfig, WarpPerRowCoversRowsExactly) {
  for (size_t rows : {size_t(1), size_t(7), size_t(8), size_t(9), size_t(8193)}) {
    const LaunchConfig c = warp_per_row_config(rows, 8);
    EXPECT_EQ(c.block, 256u);
    // Warp w of block b handles row b*8 + w; rows ≥ n return early.
    std::vector<int> seen(rows, 0);
    for (size_t b = 0; b < c.grid; ++b)
      for (size_t w = 0; w < 8; ++w)
        if (b * 8 + w < rows) ++seen[b * 8 + w];
    for (size_t r = 0; r < rows; ++r) ASSERT_EQ(seen[r], 1) << rows;
    EXPECT_LT((size_t(c.grid) - 1) * 8, rows);  // no block entirely idle
  }
  EXPECT_EQ(warp_per_row_config(0).grid, 0u);
  EXPECT_THROW(warp_per_row_config(10, 0), std::invalid_argument);
  EXPECT_THROW(warp_per_row_config(10, 33), std::invalid_argument);
}

TEST(CudaLaunchConfig, BlockPerRowAndColumnReducePlans) {
  const LaunchConfig v = block_per_row_config(16384, 50257, 1024);
  EXPECT_EQ(v.grid, 16384u);
  EXPECT_EQ(v.block, 1024u);
  EXPECT_EQ(v.shared_bytes, 32 * sizeof(float));
  EXPECT_EQ(v.per_thread, 50u);  // ceil(50257 / 1024)
  const LaunchConfig small = block_per_row_config(10, 40, 1024);
  EXPECT_EQ(small.block, 64u);  // smallest power of two ≥ 40
  for (size_t rows : {size_t(1), size_t(100), size_t(8192), size_t(100003)}) {
    for (size_t cols : {size_t(1), size_t(768), size_t(3072)}) {
      const ColumnReducePlan p = column_reduce_plan(rows, cols, 256, 1024);
      EXPECT_EQ(p.col_blocks, ceil_div(cols, 256));
      // Strips cover every row once: the last strip starts before the end.
      EXPECT_GE(p.row_blocks * p.rows_per_block, rows);
      EXPECT_LT((p.row_blocks - 1) * p.rows_per_block, rows);
      EXPECT_EQ(p.scratch_floats, p.row_blocks * cols);
    }
  }
  EXPECT_EQ(column_reduce_plan(0, 10).row_blocks, 0u);
}

// Lamb's per-segment grid: every element of every segment visited exactly once,
// by a block of its own segment, whatever the mix of lengths.
TEST(CudaLaunchConfig, SegmentPlanCoversEverySegmentOnce) {
  for (const std::vector<size_t>& lens : {std::vector<size_t>{1}, std::vector<size_t>{0, 5, 0},
                                          std::vector<size_t>{3859737, 768, 2304, 1, 4097},
                                          std::vector<size_t>{4096, 4095, 4097, 100000}}) {
    size_t longest = 0;
    for (size_t l : lens) longest = std::max(longest, l);
    const auto p = segment_plan(longest, lens.size());
    ASSERT_GE(p.splits, 1u);
    EXPECT_LE(p.splits, 1024u);
    EXPECT_EQ(p.segments, lens.size());
    for (size_t len : lens) {
      std::vector<int> seen(len, 0);
      size_t prev_end = 0;
      for (unsigned x = 0; x < p.splits; ++x) {
        const auto [b, e] = segment_block_range(len, p.splits, x);
        ASSERT_LE(b, e);
        ASSERT_EQ(b, prev_end) << "blocks are contiguous and in order";
        prev_end = e;
        for (size_t i = b; i < e; ++i) ++seen[i];
      }
      EXPECT_EQ(prev_end, len);
      for (size_t i = 0; i < len; ++i) ASSERT_EQ(seen[i], 1) << "element " << i << " of " << len;
    }
  }
  EXPECT_EQ(segment_plan(0, 3).splits, 0u);
  EXPECT_EQ(segment_plan(10, 0).splits, 0u);
  EXPECT_THROW(segment_plan(10, 70000), std::invalid_argument);
}

// Host bounds: the plan of their longest segment, or an error naming the op.
TEST(CudaLaunchConfig, SegmentPlanOfBoundsChecksThem) {
  const int64_t bounds[] = {0, 3, 9000, 9100};
  const SegmentPlan p = segment_plan_of_bounds(bounds, 3, "lamb");
  EXPECT_EQ(p.segments, 3u);
  EXPECT_EQ(p.splits, segment_plan(8997, 3).splits);
  const int64_t late_start[] = {1, 5}, decreasing[] = {0, 5, 4};
  const auto message = [](const int64_t* b, int n) {
    try {
      segment_plan_of_bounds(b, n, "onebit lamb");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(late_start, 1), "onebit lamb: segment bounds must start at 0");
  EXPECT_EQ(message(decreasing, 2), "onebit lamb: segment bounds must not decrease");
}

TEST(BackendRegistry, FallsBackOrFailsWithTheReason) {
  bool gpu = false;
#if HYBRID_HAVE_CUDA
  int n = 0;
  gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#endif
  auto cpu = make_backend("cpu", 0);
  ASSERT_NE(cpu.backend, nullptr);
  EXPECT_EQ(cpu.backend->kind(), BackendKind::cpu);

  auto autoc = make_backend("auto", 3);
  ASSERT_NE(autoc.backend, nullptr);
  if (gpu) {
    EXPECT_EQ(autoc.backend->kind(), BackendKind::cuda);
  } else {
    EXPECT_EQ(autoc.backend->kind(), BackendKind::cpu);
    EXPECT_EQ(autoc.note.find('\n'), std::string::npos);  // one line
    EXPECT_NE(autoc.note.find("using the CPU backend"), std::string::npos) << autoc.note;
#if HYBRID_HAVE_CUDA
    EXPECT_NE(autoc.note.find("cudaGetDeviceCount: "), std::string::npos) << autoc.note;
#else
    EXPECT_NE(autoc.note.find("no CUDA backend"), std::string::npos) << autoc.note;
#endif
    try {
      make_backend("cuda", 0);
      FAIL() << "device \"cuda\" without a GPU did not throw";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("device \"cuda\" was requested but no CUDA device is available (", 0), 0u)
          << msg;
#if HYBRID_HAVE_CUDA
      // The runtime's own words, e.g. "CUDA driver version is insufficient for CUDA runtime
      // version".
      EXPECT_NE(msg.find("(cudaGetDeviceCount: "), std::string::npos) << msg;
#endif
    }
    EXPECT_THROW(make_backend("cuda:1", 0), std::runtime_error);
  }
  EXPECT_THROW(make_backend("gpu", 0), std::invalid_argument);
  EXPECT_THROW(make_backend("cuda:x", 0), std::invalid_argument);
  EXPECT_THROW(make_backend("", 0), std::invalid_argument);
#if HYBRID_HAVE_CUDA
  EXPECT_TRUE(cuda_backend_compiled());
#else
  EXPECT_FALSE(cuda_backend_compiled());
#endif
}

#if HYBRID_HAVE_CUDA

// Upstream over host memory that can be told to fail, counting calls.
struct HostUpstream {
  size_t limit = SIZE_MAX;  // bytes outstanding before malloc "fails"
  size_t outstanding = 0;
  std::map<void*, size_t> live;
  std::vector<size_t> sizes;
  CachingAllocator make() {
    return CachingAllocator(
        "host-test",
        [this](size_t b) -> void* {
          if (outstanding + b > limit) return nullptr;
          void* p = std::malloc(b);
          live[p] = b;
          sizes.push_back(b);
          outstanding += b;
          return p;
        },
        [this](void* p) {
          outstanding -= live.at(p);
          live.erase(p);
          std::free(p);
        },
        [] { return std::string("host test upstream"); });
  }
};

TEST(CachingAllocator, SizeClassesBoundTheSlack) {
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 640u);  // 512 + 512/4
  EXPECT_EQ(CachingAllocator::size_class(1000), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1100), 1280u);
  EXPECT_EQ(CachingAllocator::size_class(size_t(900) << 10), size_t(1) << 20);
  EXPECT_EQ(CachingAllocator::size_class((size_t(3) << 19) + 1),
            size_t(7) << 18);  // 1.5 MiB + 1 → 1.75 MiB
  EXPECT_EQ(CachingAllocator::size_class(size_t(3) << 20), size_t(4) << 20);
  EXPECT_EQ(CachingAllocator::size_class((size_t(4) << 20) + 1), size_t(6) << 20);
  for (size_t b = 1; b < (size_t(8) << 20); b = b * 5 / 4 + 7) {
    const size_t c = CachingAllocator::size_class(b);
    ASSERT_GE(c, b);
    if (b >= 512 && b < CachingAllocator::kLargeThreshold) {
      ASSERT_LE(c, b + b / 4) << b;  // ≤ 25%
    }
    if (b >= CachingAllocator::kLargeThreshold) {
      ASSERT_LT(c - b, CachingAllocator::kLargeRound) << b;
    }
    ASSERT_EQ(CachingAllocator::size_class(c), c) << "classes are fixed points";
  }
}

TEST(CachingAllocator, ReusesBlocksAndKeepsStatistics) {
  HostUpstream up;
  {
    auto a = up.make();
    void* p = a.allocate(1000);
    void* q = a.allocate(5000);
    auto s = a.stats();
    EXPECT_EQ(s.allocated, 1024u + 5120u);
    EXPECT_EQ(s.requested, 6000u);
    EXPECT_EQ(s.upstream_allocs, 2u);
    EXPECT_EQ(s.live_blocks, 2u);
    a.deallocate(p);
    s = a.stats();
    EXPECT_EQ(s.allocated, 5120u);
    EXPECT_EQ(s.cached, 1024u);
    EXPECT_EQ(s.reserved(), 6144u);
    void* r = a.allocate(900);  // same class (1024): reused, no upstream call
    EXPECT_EQ(r, p);
    s = a.stats();
    EXPECT_EQ(s.cache_hits, 1u);
    EXPECT_EQ(s.upstream_allocs, 2u);
    EXPECT_EQ(s.peak_allocated, 6144u);
    EXPECT_EQ(a.block_size(q), 5120u);
    void* t = a.allocate(2000);  // another class: a new block
    EXPECT_NE(t, p);
    EXPECT_EQ(a.stats().upstream_allocs, 3u);
    a.deallocate(t);
    a.deallocate(q);
    a.reset_peak();
    EXPECT_EQ(a.stats().peak_allocated, 1024u);
    a.empty_cache();
    EXPECT_EQ(a.stats().cached, 0u);
    EXPECT_EQ(up.live.size(), 1u);  // only r is live
    EXPECT_EQ(a.allocate(0), nullptr);
    a.deallocate(nullptr);  // ignored
    int unknown = 0;
    EXPECT_THROW(a.deallocate(&unknown), std::invalid_argument);
  }
  EXPECT_TRUE(up.live.empty());  // the destructor returned live and cached blocks
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheThenNamesTheSize) {
  HostUpstream up;
  up.limit = size_t(8) << 20;
  auto a = up.make();
  void* big = a.allocate(size_t(6) << 20);
  a.deallocate(big);  // cached, still counted upstream
  // 4 MiB does not fit next to the cached 6 MiB: the cache is released and it succeeds.
  void* p = a.allocate(size_t(4) << 20);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(a.stats().cached, 0u);
  EXPECT_EQ(a.stats().upstream_frees, 1u);
  try {
    a.allocate(size_t(5) << 20);
    FAIL() << "allocation over the limit succeeded";
  } catch (const DeviceOutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.requested(), size_t(5) << 20);
    EXPECT_EQ(msg.rfind("out of memory: host-test cannot allocate 5.00 MiB (5242880 bytes", 0), 0u)
        << msg;
    EXPECT_NE(msg.find("4.00 MiB allocated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("host test upstream"), std::string::npos) << msg;
  }
  a.deallocate(p);
}

TEST(CudaGemmPlans, KeysSeparateShapesAlignmentsAndDtypes) {
  alignas(256) static char buf[1024];
  GemmCall c;
  c.M = 64, c.N = 32, c.K = 16, c.lda = 16, c.ldb = 32, c.ldc = 32;
  c.A = buf, c.B = buf, c.C = buf;
  const GemmKey k = make_gemm_key(DType::f16, c, false);
  EXPECT_EQ(k, make_gemm_key(DType::f16, c, false));
  EXPECT_EQ(GemmKeyHash{}(k), GemmKeyHash{}(make_gemm_key(DType::f16, c, false)));
  EXPECT_NE(k, make_gemm_key(DType::bf16, c, false));
  GemmCall shifted = c;
  shifted.A = buf + 2;  // 2-byte aligned: a different plan
  EXPECT_NE(k, make_gemm_key(DType::f16, shifted, false));
  GemmCall bias = c;
  bias.epilogue = Epilogue::bias;
  EXPECT_NE(k, make_gemm_key(DType::f16, bias, false));
  // TF32 only distinguishes fp32 plans.
  EXPECT_EQ(k, make_gemm_key(DType::f16, c, true));
  EXPECT_NE(make_gemm_key(DType::f32, c, false), make_gemm_key(DType::f32, c, true));
  // Strides matter only for batched calls.
  GemmCall strided = c;
  strided.stride_a = 12345;
  EXPECT_EQ(k, make_gemm_key(DType::f16, strided, false));
  strided.batch = 4;
  EXPECT_NE(k, make_gemm_key(DType::f16, strided, false));

  EXPECT_EQ(pointer_alignment(buf), 256);
  EXPECT_EQ(pointer_alignment(buf + 2), 2);
  EXPECT_EQ(pointer_alignment(buf + 48), 16);
  EXPECT_EQ(lt_type(DType::f32), CUDA_R_32F);
  EXPECT_EQ(lt_type(DType::f16), CUDA_R_16F);
  EXPECT_EQ(lt_type(DType::bf16), CUDA_R_16BF);
  EXPECT_THROW(lt_type(DType(7)), std::invalid_argument);
}

TEST(CachingAllocator, FormatsByteSizes) {
  EXPECT_EQ(format_byte_size(512), "512 B");
  EXPECT_EQ(format_byte_size(1536), "1.50 KiB");
  EXPECT_EQ(format_byte_size(uint64_t(3) << 30), "3.00 GiB");
}

#endif  // HYBRID_HAVE_CUDA

}  // namespace
}  // namespace hybrid::kernels
