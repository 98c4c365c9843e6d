// See openblas.h. The library is Debian's pthread build (libopenblas0-pthread):
// its own thread pool, sized once to OpenMP's thread count so both use the same cores.
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
  if (set_threads) set_threads(omp_get_max_threads());
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
  g_sgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, M, N, K, alpha, A,
          lda, B, ldb, beta, C, ldc);
}

}  // namespace hybrid::kernels::cpu::openblas
