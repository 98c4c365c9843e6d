#include "engine/comm/mpi_types.h"

#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#define HYBRID_COMM_F16C 1
#endif

namespace hybrid::engine::comm {

using kernels::bf16_t;
using kernels::f16_t;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
  throw std::runtime_error(fmt::format("{}: {} (MPI error {})", what,
                                       len ? std::string(msg, size_t(len)) : "unknown error", rc));
}

namespace {

// Same NaN behaviour as _mm256_max_ps/_mm256_min_ps below, so the vector and
// scalar paths agree bit for bit: the second operand wins unless x > y (x < y).
template <ReduceOp Op>
inline float combine(float x, float y) {
  if constexpr (Op == ReduceOp::sum)
    return x + y;
  else if constexpr (Op == ReduceOp::max)
    return x > y ? x : y;
  else
    return x < y ? x : y;
}

template <class T, ReduceOp Op>
void reduce_half(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  const int n = *len;
  int i = 0;
#ifdef HYBRID_COMM_F16C
  if constexpr (std::is_same_v<T, f16_t>) {
    for (; i + 8 <= n; i += 8) {
      const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
      const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
      __m256 z;
      if constexpr (Op == ReduceOp::sum)
        z = _mm256_add_ps(x, y);
      else if constexpr (Op == ReduceOp::max)
        z = _mm256_max_ps(x, y);
      else
        z = _mm256_min_ps(x, y);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i),
                       _mm256_cvtps_ph(z, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
#endif
  for (; i < n; ++i)
    b[i] = kernels::store<T>(combine<Op>(kernels::load(a[i]), kernels::load(b[i])));
}

template <class T>
MPI_User_function* pick(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return &reduce_half<T, ReduceOp::sum>;
    case ReduceOp::max:
      return &reduce_half<T, ReduceOp::max>;
    case ReduceOp::min:
      return &reduce_half<T, ReduceOp::min>;
  }
  throw std::invalid_argument("mpi: invalid reduce op");
}

int half_index(DType dt) { return dt == DType::f16 ? 0 : 1; }

}  // namespace

MPI_User_function* half_reduce_function(DType dt, ReduceOp op) {
  switch (dt) {
    case DType::f16:
      return pick<f16_t>(op);
    case DType::bf16:
      return pick<bf16_t>(op);
    case DType::f32:
      break;
  }
  throw std::invalid_argument("half_reduce_function: fp32 uses MPI's own MPI_FLOAT operations");
}

void MpiTypes::create() {
  if (created_) return;
  created_ = true;  // free() releases whatever part was made if a call below throws
  for (int h = 0; h < 2; ++h) {
    check_mpi(MPI_Type_contiguous(2, MPI_BYTE, &half_[h]), "MPI_Type_contiguous (16-bit float)");
    check_mpi(MPI_Type_commit(&half_[h]), "MPI_Type_commit (16-bit float)");
    const DType dt = h == 0 ? DType::f16 : DType::bf16;
    for (int o = 0; o < 3; ++o)
      check_mpi(MPI_Op_create(half_reduce_function(dt, ReduceOp(o)), 1, &ops_[h][o]),
                "MPI_Op_create (16-bit float)");
  }
}

void MpiTypes::free() {
  if (!created_) return;
  created_ = false;
  int finalized = 1;
  MPI_Finalized(&finalized);
  for (int h = 0; h < 2; ++h) {
    for (auto& op : ops_[h])
      if (op != MPI_OP_NULL) {
        if (!finalized) MPI_Op_free(&op);
        op = MPI_OP_NULL;
      }
    if (half_[h] != MPI_DATATYPE_NULL) {
      if (!finalized) MPI_Type_free(&half_[h]);
      half_[h] = MPI_DATATYPE_NULL;
    }
  }
}

MpiTypes::~MpiTypes() { free(); }

MPI_Datatype MpiTypes::datatype(DType dt) const {
  if (dt == DType::f32) return MPI_FLOAT;
  return half_[half_index(dt)];
}

MPI_Op MpiTypes::op(DType dt, ReduceOp op) const {
  if (dt == DType::f32) {
    switch (op) {
      case ReduceOp::sum:
        return MPI_SUM;
      case ReduceOp::max:
        return MPI_MAX;
      case ReduceOp::min:
        return MPI_MIN;
    }
  }
  return ops_[half_index(dt)][int(op)];
}

}  // namespace hybrid::engine::comm
