// CpuBackend identity and memory: alignment, huge-page advice for large
// buffers, zero, copies (large ones go through the threaded path), and dtype support.
#include "kernels/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>

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

// The flags of the mapping holding p in /proc/self/smaps ("" if none).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' '))
      inside = lo <= at && at < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

// Large buffers are 2 MiB-aligned and their mapping advised to huge pages
// (VmFlags "hg"); small ones are not advised.
TEST(CpuBackend, LargeAllocationsAreAdvisedToHugePages) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages: nothing to advise";
  auto be = make_cpu_backend();
  const size_t large = (size_t(6) << 20) + 100, small = size_t(1) << 20;
  void* p = be->allocate(large);
  void* q = be->allocate(small);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20), 0u);
  const std::string flags = vm_flags_of(p);
  ASSERT_FALSE(flags.empty()) << "no mapping in /proc/self/smaps holds the buffer";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  EXPECT_EQ(vm_flags_of(q).find(" hg"), std::string::npos) << vm_flags_of(q);
  be->deallocate(p, large);
  be->deallocate(q, small);
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
