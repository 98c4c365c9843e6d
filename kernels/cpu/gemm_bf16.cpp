// The AVX512_BF16 GEMM (gemm_bf16.h).
//
// VDPBF16PS multiplies bf16 pairs and adds both products into one fp32 lane, so
// operands are packed as pairs along K:
// - A in blocks of kMR rows: for each k pair p, kMR 32-bit words (a[i][2p], a[i][2p+1]),
//   broadcast to all lanes one row at a time;
// - B in panels of kNR = 32 columns: for each k pair p, 32 words (b[2p][j], b[2p+1][j]),
//   two registers, packed per panel by the thread that computes it (it stays in L2).
// A kMR × 32 tile of C lives in 24 accumulators; every k pair costs 2 loads, 12
// broadcasts and 24 VDPBF16PS. Tails: rows of A and columns of B past the matrix
// and the odd last k are packed as zeros; C is stored under a mask.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and then warn that
// the value may be used uninitialized (a false positive of the header itself).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/gemm_bf16.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace hybrid::kernels::cpu {

namespace {

constexpr int kMR = 12, kNR = 32;

#define HYBRID_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// One k pair of op(X) at (row, 2p), (row, 2p + 1) as a 32-bit word; zero past the end.
inline uint32_t pair(const uint16_t* x, int ld, bool trans, int row, int k, int rows, int K) {
  if (row >= rows) return 0;
  const auto at = [&](int kk) -> uint32_t {
    if (kk >= K) return 0;
    return trans ? x[size_t(kk) * ld + row] : x[size_t(row) * ld + kk];
  };
  return at(k) | at(k + 1) << 16;
}

// op(A) [M, K] → blocks of kMR rows × Kp pairs.
void pack_a(bool ta, int M, int K, const uint16_t* A, int lda, uint32_t* out) {
  const int Kp = (K + 1) / 2, blocks = (M + kMR - 1) / kMR;
#pragma omp parallel for schedule(static) if (size_t(M) * K > (size_t(1) << 16))
  for (int blk = 0; blk < blocks; ++blk) {
    uint32_t* o = out + size_t(blk) * Kp * kMR;
    for (int p = 0; p < Kp; ++p)
      for (int r = 0; r < kMR; ++r)
        o[size_t(p) * kMR + r] = pair(A, lda, ta, blk * kMR + r, 2 * p, M, K);
  }
}

// Columns j0 .. j0 + 32 of op(B) [K, N] → Kp pairs × 32 words. op(B)[k][j] is
// B[j][k] when transposed: rows of B are then the panel's columns.
void pack_b_panel(bool tb, int N, int K, const uint16_t* B, int ldb, int j0, uint32_t* out) {
  const int Kp = (K + 1) / 2;
  for (int c = 0; c < kNR; ++c) {
    const int j = j0 + c;
    for (int p = 0; p < Kp; ++p) {
      uint32_t w = 0;
      if (j < N) {
        const uint32_t lo = tb ? B[size_t(j) * ldb + 2 * p] : B[size_t(2 * p) * ldb + j];
        uint32_t hi = 0;
        if (2 * p + 1 < K)
          hi = tb ? B[size_t(j) * ldb + 2 * p + 1] : B[size_t(2 * p + 1) * ldb + j];
        w = lo | hi << 16;
      }
      out[size_t(p) * kNR + c] = w;
    }
  }
}

struct Epilogue {
  float alpha, beta;
  const uint16_t* bias;  // null: none
};

// acc += op(A) block × B panel over Kp pairs, then C = alpha·acc + beta·C (+ bias).
template <int R>
HYBRID_BF16_TARGET void tile(const uint32_t* a, const uint32_t* b, int Kp, uint16_t* C, int ldc,
                             int cols, const Epilogue& e) {
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int p = 0; p < Kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + size_t(p) * kNR);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + size_t(p) * kNR + 16);
    const uint32_t* ap = a + size_t(p) * kMR;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(int(ap[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  const __m512 alpha = _mm512_set1_ps(e.alpha), beta = _mm512_set1_ps(e.beta);
  for (int h = 0; h < 2; ++h) {
    const int n = std::clamp(cols - 16 * h, 0, 16);
    if (n == 0) break;
    const __mmask16 mask = __mmask16((1u << n) - 1);
    __m512 bias = _mm512_setzero_ps();
    if (e.bias) {
      const __m256i bb = _mm256_maskz_loadu_epi16(mask, e.bias + 16 * h);
      bias = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bb), 16));
    }
    for (int r = 0; r < R; ++r) {
      uint16_t* c = C + size_t(r) * ldc + 16 * h;
      __m512 v = _mm512_add_ps(_mm512_mul_ps(acc[r][h], alpha), bias);
      if (e.beta != 0.0f) {
        const __m256i old = _mm256_maskz_loadu_epi16(mask, c);
        const __m512 c32 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(old), 16));
        v = _mm512_fmadd_ps(c32, beta, v);
      }
      _mm256_mask_storeu_epi16(c, mask, (__m256i)_mm512_cvtneps_pbh(v));
    }
  }
}

using TileFn = void (*)(const uint32_t*, const uint32_t*, int, uint16_t*, int, int,
                        const Epilogue&);

template <int... R>
constexpr auto make_tiles(std::integer_sequence<int, R...>) {
  return std::array<TileFn, sizeof...(R)>{&tile<R + 1>...};
}
constexpr auto kTiles = make_tiles(std::make_integer_sequence<int, kMR>{});

}  // namespace

bool bf16_isa_allowed(const char* max_cpu_isa) {
  if (!max_cpu_isa) return true;
  const std::string cap = max_cpu_isa;
  for (const char* below :
       {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI"})
    if (cap == below) return false;
  return true;
}

bool bf16_kernel_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512bf16") &&
                         bf16_isa_allowed(std::getenv("ONEDNN_MAX_CPU_ISA"));
  return ok;
}

void gemm_bf16_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16_t* A,
                      int lda, const bf16_t* B, int ldb, float beta, bf16_t* C, int ldc,
                      const bf16_t* bias) {
  const int Kp = (K + 1) / 2, row_blocks = (M + kMR - 1) / kMR, panels = (N + kNR - 1) / kNR;
  thread_local std::vector<uint32_t> a_packed;
  a_packed.resize(size_t(row_blocks) * Kp * kMR);
  pack_a(trans_a, M, K, reinterpret_cast<const uint16_t*>(A), lda, a_packed.data());
  const uint32_t* a = a_packed.data();
  const Epilogue e{alpha, beta, reinterpret_cast<const uint16_t*>(bias)};
  const auto* b16 = reinterpret_cast<const uint16_t*>(B);
  auto* c16 = reinterpret_cast<uint16_t*>(C);
#pragma omp parallel for schedule(dynamic, \
                                  1) if (panels > 1 && size_t(M) * N * K > (size_t(1) << 20))
  for (int panel = 0; panel < panels; ++panel) {
    thread_local std::vector<uint32_t> b_packed;
    b_packed.resize(size_t(Kp) * kNR);
    const int j0 = panel * kNR, cols = std::min(kNR, N - j0);
    pack_b_panel(trans_b, N, K, b16, ldb, j0, b_packed.data());
    Epilogue pe = e;
    if (pe.bias) pe.bias += j0;
    for (int blk = 0; blk < row_blocks; ++blk) {
      const int i0 = blk * kMR, rows = std::min(kMR, M - i0);
      kTiles[size_t(rows - 1)](a + size_t(blk) * Kp * kMR, b_packed.data(), Kp,
                               c16 + size_t(i0) * ldc + j0, ldc, cols, pe);
    }
  }
}

}  // namespace hybrid::kernels::cpu
