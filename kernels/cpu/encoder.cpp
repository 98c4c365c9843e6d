// Token + position embedding, whole vocabulary or one vocabulary shard (tensor
// parallelism: wte holds `rows` rows from id `begin`; the whole vocabulary is the
// shard from 0 that holds every id).
//
// forward:  one pass per (b, t) row: out = wte[token] + wpe[p], p the token's
//           position (positions[bt], or t), rows in parallel; a token outside the
//           shard contributes 0, as does a null wpe.
// backward: dwte[token] += dout and dwpe[p] += dout. Tokens (and packed
//           documents' positions) repeat, so a row-parallel scatter would race;
//           instead each thread owns a range of channels and walks the rows
//           sorted by key (stable), summing each key's rows in fp32 and rounding
//           once into the table, as the CUDA kernel does (no atomics,
//           deterministic; a bf16 table rounded per row lost precision with every
//           repeat: position 0 recurs in every packed document). Without
//           positions, dwpe[t] sums its B rows.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

// The vocabulary ids [begin, begin + rows) that this wte holds.
struct Shard {
  int begin = 0;
  int rows = std::numeric_limits<int>::max();
  bool holds(int32_t token) const {
    return token >= begin && int64_t(token) - begin < int64_t(rows);
  }
};

template <class T>
void encoder_fwd(T* out, const int32_t* tokens, const int32_t* positions, const T* wte,
                 const T* wpe, int B, int T_, int C, Shard shard) {
#pragma omp parallel for schedule(static) if (size_t(B) * T_ * C > cpu::kParallelMin)
  for (int bt = 0; bt < B * T_; ++bt) {
    float* a = cpu::thread_scratch(0, size_t(C));
    float* p = cpu::thread_scratch(1, size_t(C));
    const int32_t token = tokens[bt];
    const float* e = shard.holds(token)
                         ? cpu::view_f32(wte + size_t(token - shard.begin) * C, a, size_t(C))
                         : nullptr;
    const size_t pos = size_t(positions ? positions[bt] : bt % T_);
    const float* q = wpe ? cpu::view_f32(wpe + pos * C, p, size_t(C)) : nullptr;
    float* o = cpu::thread_scratch(2, size_t(C));
    if (e && q)  // the whole-vocabulary case: one add, as always
      for (int c = 0; c < C; ++c) o[c] = e[c] + q[c];
    else if (e || q)
      std::copy_n(e ? e : q, C, o);
    else
      std::fill(o, o + C, 0.0f);
    cpu::from_f32(out + size_t(bt) * C, o, size_t(C));
  }
}

// The rows bt whose key the shard holds, ordered by key; stable, so a key's rows
// keep their order (fp32 sums in the order of the rows).
std::vector<int> rows_by_key(const int32_t* keys, int BT, Shard shard) {
  std::vector<int> order;
  order.reserve(size_t(BT));
  for (int bt = 0; bt < BT; ++bt)
    if (shard.holds(keys[bt])) order.push_back(bt);
  std::stable_sort(order.begin(), order.end(), [keys](int a, int b) { return keys[a] < keys[b]; });
  return order;
}

// table[keys[bt] - shard.begin] += dout[bt] for the rows the shard holds, each
// thread owning a block of channels; a key's rows summed in fp32, rounded once.
template <class T>
void scatter_rows(T* table, const T* dout, const int32_t* keys, int BT, int C, Shard shard) {
  constexpr int kCols = 64;
  const int blocks = (C + kCols - 1) / kCols;
  const std::vector<int> order = rows_by_key(keys, BT, shard);
  const size_t n = order.size();
#pragma omp parallel for schedule(static) if (size_t(BT) * C > cpu::kParallelMin)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kCols, nc = std::min(kCols, C - c0);
    float g[kCols], w[kCols];
    for (size_t i = 0; i < n;) {
      const int32_t key = keys[order[i]];
      T* dst = table + size_t(key - shard.begin) * C + c0;
      cpu::to_f32(w, dst, size_t(nc));
      for (; i < n && keys[order[i]] == key; ++i) {
        const float* d = cpu::view_f32(dout + size_t(order[i]) * C + c0, g, size_t(nc));
        for (int c = 0; c < nc; ++c) w[c] += d[c];
      }
      cpu::from_f32(dst, w, size_t(nc));
    }
  }
}

template <class T>
void encoder_bwd(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, const int32_t* positions,
                 int B, int T_, int C, Shard shard) {
  if (dwte) scatter_rows(dwte, dout, tokens, B * T_, C, shard);
  if (dwpe && positions) scatter_rows(dwpe, dout, positions, B * T_, C, Shard{});
  if (dwpe && !positions) {
#pragma omp parallel for schedule(static) if (size_t(B) * T_ * C > cpu::kParallelMin)
    for (int t = 0; t < T_; ++t) {
      float* acc = cpu::thread_scratch(0, size_t(C));
      float* g = cpu::thread_scratch(1, size_t(C));
      cpu::to_f32(acc, dwpe + size_t(t) * C, size_t(C));
      for (int b = 0; b < B; ++b) {
        const float* d = cpu::view_f32(dout + (size_t(b) * T_ + t) * C, g, size_t(C));
        for (int c = 0; c < C; ++c) acc[c] += d[c];
      }
      cpu::from_f32(dwpe + size_t(t) * C, acc, size_t(C));
    }
  }
}

void check_shard(int begin, int rows, const char* op) {
  if (begin < 0 || rows < 0)
    throw std::invalid_argument(std::string(op) + ": need begin >= 0 and rows >= 0, got begin = " +
                                std::to_string(begin) + ", rows = " + std::to_string(rows));
}

}  // namespace

void CpuBackend::encoder_forward(DType dt, void* out, const int32_t* tokens,
                                 const int32_t* positions, const void* wte, const void* wpe, int B,
                                 int T, int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    encoder_fwd(static_cast<S*>(out), tokens, positions, static_cast<const S*>(wte),
                static_cast<const S*>(wpe), B, T, C, Shard{});
  });
}

void CpuBackend::encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                  const int32_t* tokens, const int32_t* positions, int B, int T,
                                  int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    encoder_bwd(static_cast<S*>(dwte), static_cast<S*>(dwpe), static_cast<const S*>(dout), tokens,
                positions, B, T, C, Shard{});
  });
}

void CpuBackend::encoder_shard_forward(DType dt, void* out, const int32_t* tokens,
                                       const int32_t* positions, const void* wte, const void* wpe,
                                       int B, int T, int C, int begin, int rows) {
  check_shard(begin, rows, "encoder_shard_forward");
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    encoder_fwd(static_cast<S*>(out), tokens, positions, static_cast<const S*>(wte),
                static_cast<const S*>(wpe), B, T, C, Shard{begin, rows});
  });
}

void CpuBackend::encoder_shard_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                        const int32_t* tokens, const int32_t* positions, int B,
                                        int T, int C, int begin, int rows) {
  check_shard(begin, rows, "encoder_shard_backward");
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    encoder_bwd(static_cast<S*>(dwte), static_cast<S*>(dwpe), static_cast<const S*>(dout), tokens,
                positions, B, T, C, Shard{begin, rows});
  });
}

}  // namespace hybrid::kernels
