// OpenBLAS, loaded on purpose: the library picks its kernels (its "core type")
// once, when it loads, from OPENBLAS_CORETYPE or its own CPU detection, and
// Debian's 0.3.21 detects CPUs newer than itself as a generic SSE3 core
// (Sapphire Rapids runs its Prescott kernels at a fifth of the SkylakeX rate).
// So it is not linked: the first use sets the core type this CPU should get
// (unless the user has set one), dlopens the library and reports what it chose.
#pragma once

#include <string>

#include "base/host.h"

namespace hybrid::kernels::cpu::openblas {

// The OPENBLAS_CORETYPE for a CPU with these flags: "SkylakeX" (AVX-512 F/BW/VL/DQ),
// "Zen" (AMD with AVX2), "Haswell" (AVX2 + FMA), "" (let OpenBLAS detect).
std::string core_type_for(const base::CpuInfo& cpu);

struct Library {
  bool loaded = false;
  std::string path;       // the file dlopen found
  std::string core;       // openblas_get_corename(), e.g. "SkylakeX"
  std::string core_from;  // "OPENBLAS_CORETYPE set by the user", "chosen for this CPU", ...
  std::string error;      // why it is not loaded
};

// Loads the library once (thread-safe) and returns what happened.
const Library& library();

// C[M,N] = alpha · op(A) · op(B) + beta · C, row-major fp32. Only after library().loaded.
// OpenBLAS itself runs single-threaded; the rows (or columns) of C are split over
// OpenMP's threads, so only one thread pool ever runs (see openblas.cpp).
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

}  // namespace hybrid::kernels::cpu::openblas
