// See openblas.h. The library is Debian's pthread build (libopenblas0-pthread),
// which brings a thread pool of its own. Two pools on the same cores fight: after
// a GEMM OpenBLAS's threads spin (2^28 cycles by default) while the next OpenMP
// kernel runs, and OpenMP's spin while OpenBLAS works; a bf16 GEMM on OpenBLAS
// (OpenMP conversions around an OpenBLAS call) measured 7 GFLOP/s where the fp32
// call alone ran 67. So OpenBLAS runs single-threaded, and sgemm() splits the
// product into one block of rows or columns per OpenMP thread: one pool.
#include "kernels/cpu/openblas.h"

#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace hybrid::kernels::cpu::openblas {

namespace {

using SgemmFn = void (*)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha,
                         const float* A, int lda, const float* B, int ldb, float beta, float* C,
                         int ldc);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;  // cblas.h's values

SgemmFn g_sgemm = nullptr;

bool has(const base::CpuInfo& cpu, const char* flag) {
  return std::find(cpu.flags.begin(), cpu.flags.end(), flag) != cpu.flags.end();
}

Library load() {
  Library lib;
  const char* user_core = std::getenv("OPENBLAS_CORETYPE");
  const std::string core = user_core ? user_core : core_type_for(base::read_cpu_info());
  if (user_core)
    lib.core_from = "OPENBLAS_CORETYPE set by the user";
  else if (!core.empty())
    lib.core_from = "chosen for this CPU";
  else
    lib.core_from = "OpenBLAS's own detection";
  // OpenBLAS reads the variable in its constructor, during dlopen; it is removed
  // again so that child processes see the environment they were given.
  if (!user_core && !core.empty()) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  void* handle = nullptr;
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
      lib.path = name;
      break;
    }
  }
  if (!user_core && !core.empty()) unsetenv("OPENBLAS_CORETYPE");
  if (!handle) {
    lib.error = std::string("cannot load libopenblas.so.0 (") + dlerror() + ")";
    return lib;
  }
  g_sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "cblas_sgemm"));
  auto corename = reinterpret_cast<char* (*)()>(dlsym(handle, "openblas_get_corename"));
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads"));
  if (!g_sgemm || !corename) {
    lib.error = lib.path + " has no cblas_sgemm/openblas_get_corename";
    return lib;
  }
  if (set_threads) set_threads(1);
  lib.core = corename();
  lib.loaded = true;
  return lib;
}

}  // namespace

std::string core_type_for(const base::CpuInfo& cpu) {
  if (has(cpu, "avx512f") && has(cpu, "avx512bw") && has(cpu, "avx512vl") && has(cpu, "avx512dq"))
    return "SkylakeX";
  if (has(cpu, "avx2") && has(cpu, "fma"))
    return cpu.model.find("AMD") != std::string::npos ? "Zen" : "Haswell";
  return "";
}

const Library& library() {
  static std::once_flag once;
  static Library lib;
  std::call_once(once, [] { lib = load(); });
  return lib;
}

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  const int ta = trans_a ? kTrans : kNoTrans, tb = trans_b ? kTrans : kNoTrans;
  // The longer side is split, in multiples of 16 (one AVX-512 register of C),
  // at least 64 rows or columns per thread so each call still amortises packing.
  const bool by_rows = M >= N;
  const int side = by_rows ? M : N;
  const int parts = omp_in_parallel() ? 1 : std::clamp(side / 64, 1, omp_get_max_threads());
  if (parts == 1) {
    g_sgemm(kRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int t = 0; t < parts; ++t) {
    const int lo = side * t / parts / 16 * 16;
    const int hi = t + 1 == parts ? side : side * (t + 1) / parts / 16 * 16;
    if (hi <= lo) continue;
    if (by_rows) {  // rows lo..hi of op(A) and of C
      const float* a = trans_a ? A + lo : A + size_t(lo) * lda;
      g_sgemm(kRowMajor, ta, tb, hi - lo, N, K, alpha, a, lda, B, ldb, beta, C + size_t(lo) * ldc,
              ldc);
    } else {  // columns lo..hi of op(B) and of C
      const float* b = trans_b ? B + size_t(lo) * ldb : B + lo;
      g_sgemm(kRowMajor, ta, tb, M, hi - lo, K, alpha, A, lda, b, ldb, beta, C + lo, ldc);
    }
  }
}

}  // namespace hybrid::kernels::cpu::openblas
