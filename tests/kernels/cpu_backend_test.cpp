// CpuBackend identity and memory: alignment, zero, copies (large ones go through
// the threaded path), and dtype support.
#include "kernels/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

namespace hybrid::kernels {
namespace {

TEST(CpuBackend, IdentityAndDtypes) {
  auto be = make_cpu_backend();
  EXPECT_EQ(be->kind(), BackendKind::cpu);
  EXPECT_NE(be->name().find("oneDNN"), std::string::npos) << be->name();
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) EXPECT_TRUE(be->supports(dt));
}

TEST(CpuBackend, AllocationsAre64ByteAligned) {
  auto be = make_cpu_backend();
  for (size_t bytes : {size_t(1), size_t(63), size_t(100), size_t(1) << 20}) {
    void* p = be->allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes << " bytes";
    be->deallocate(p, bytes);
  }
  EXPECT_EQ(be->allocate(0), nullptr);
}

TEST(CpuBackend, ZeroAndCopyLargeBuffers) {
  auto be = make_cpu_backend();
  const size_t n = (size_t(5) << 20) + 13;  // > the 2 MiB threaded threshold, odd tail
  std::vector<uint8_t> src(n), dst(n, 0xff);
  std::iota(src.begin(), src.end(), uint8_t(0));
  be->copy(dst.data(), src.data(), n);
  EXPECT_EQ(dst, src);
  be->zero(dst.data(), n);
  EXPECT_EQ(std::count(dst.begin(), dst.end(), 0), std::ptrdiff_t(n));
  be->copy_from_host(dst.data(), src.data(), 100);
  std::vector<uint8_t> back(100);
  be->copy_to_host(back.data(), dst.data(), 100);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), src.begin()));
  EXPECT_EQ(dst[100], 0);
}

}  // namespace
}  // namespace hybrid::kernels
