// CpuBackend: memory and identity. Host memory is 64-byte aligned (one cache
// line, one AVX-512 register) so vector loads never split lines at row starts.
// Buffers of kHugeFrom bytes or more (weights, activations, optimizer states)
// are 2 MiB-aligned and advised to transparent huge pages (MADV_HUGEPAGE: used
// where the kernel's THP mode is madvise or always, Debian's default being
// madvise; ignored where it is never). A decode step streams every weight once,
// and with 4 KiB pages each page is a TLB miss and a fresh start for the
// prefetchers: GPT-2 124M's matrices at one row on 2 threads read in fp32
// 17.0 -> 15.9 ms, bf16 8.29 -> 7.76 ms (medians of 8 interleaved rounds of a
// throwaway benchmark, AMD EPYC Zen 4, 2026-12-06).
#include "kernels/cpu/cpu_backend.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/gemm.h"

namespace hybrid::kernels {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t(2) << 20, kHugeFrom = size_t(4) << 20;

// Copies and zeroing of large buffers are split across threads: one core
// does not saturate memory bandwidth.
void parallel_memcpy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kBlock = size_t(1) << 20;
  if (bytes < 2 * kBlock) {
    std::memmove(dst, src, bytes);
    return;
  }
  const int64_t blocks = int64_t((bytes + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < blocks; ++i) {
    const size_t off = size_t(i) * kBlock;
    std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off,
                std::min(kBlock, bytes - off));
  }
}
}  // namespace

CpuBackend::CpuBackend() = default;

std::string CpuBackend::name() const {
  const dnnl_version_t* v = dnnl_version();
  return "cpu (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + ", " + std::to_string(omp_get_max_threads()) + " threads)";
}

void* CpuBackend::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const bool huge = bytes >= kHugeFrom;
  const size_t align = huge ? kHugePage : kAlignment;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p)  // the engine's tracking allocator names the category it was for
    throw BackendOutOfMemory(
        "out of host memory: cannot allocate " + std::to_string(bytes) + " bytes", bytes);
  if (huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice: a refusal leaves 4 KiB pages
  return p;
}

void CpuBackend::deallocate(void* ptr, size_t) { std::free(ptr); }

void CpuBackend::zero(void* ptr, size_t bytes) {
  constexpr size_t kBlock = size_t(1) << 20;
  if (bytes < 2 * kBlock) {
    std::memset(ptr, 0, bytes);
    return;
  }
  const int64_t blocks = int64_t((bytes + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < blocks; ++i) {
    const size_t off = size_t(i) * kBlock;
    std::memset(static_cast<char*>(ptr) + off, 0, std::min(kBlock, bytes - off));
  }
}

void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  if (dst != src) parallel_memcpy(dst, src, bytes);
}
void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  copy(host_dst, src, bytes);
}
void CpuBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  copy(dst, host_src, bytes);
}

void CpuBackend::gemm(DType dt, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                      const void* A, int lda, const void* B, int ldb, float beta, void* C,
                      int ldc) {
  cpu::gemm(dt, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace hybrid::kernels
