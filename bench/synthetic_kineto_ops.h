// What the synthetic Kineto trace (bench/synthetic_kineto.cpp) has each op of a
// GPT-2 block launch, as PyTorch names it: the cpu_ops with their input dims,
// the kernels (CUDA 12 / cuBLAS / flash-attention names) and their durations.
#pragma once

#include <cstdint>
#include <vector>

namespace hybrid::bench::synthetic_ops {

// The kernels of one op: what the cpu_op is called and what it launches.
struct Launch {
  const char* kernel;
  int gpu_us;
  const char* category = "kernel";  // or gpu_memcpy, gpu_memset
  uint64_t bytes = 0;               // copies and memsets
};
struct Op {
  const char* name;
  const char* dims;  // "Input Dims" (record_shapes=True)
  std::vector<Launch> launches;
};

inline constexpr const char* kLayerNorm =
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
    "float, float const*, float const*, float const*, float*, float*, float*)";
inline constexpr const char* kGemmTn =
    "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_warpgroupsize1x1x1_execute_segment_"
    "k_off_kernel__5x_cublas";
inline constexpr const char* kGemmNn = "ampere_sgemm_128x64_nn";
inline constexpr const char* kGemmNt = "ampere_sgemm_64x64_nt";
inline constexpr const char* kFlashFwd =
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 64, 4, "
    "false, false, cutlass::half_t, pytorch_flash::Flash_kernel_traits<64, 128, 64, 4, "
    "cutlass::half_t> >, false, true, false, false, true, true, false, "
    "false>(pytorch_flash::Flash_fwd_params)";
inline constexpr const char* kFlashBwd =
    "void "
    "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_"
    "traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::half_t, "
    "pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::half_t> >, true, false, false, "
    "false, false, true, false>(pytorch_flash::Flash_bwd_params)";
inline constexpr const char* kAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)";
inline constexpr const char* kGelu =
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
    "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
    "const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
inline constexpr const char* kGeluBwd =
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
    "const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, "
    "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
    "const::{lambda(float, float)#1}, at::detail::Array<char*, 3>)";
inline constexpr const char* kLayerNormBwd =
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float "
    "const*, float const*, float const*, float const*, float const*, float*, int)";
inline constexpr const char* kGammaBeta =
    "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, "
    "long, float const*, float const*, float const*, float const*, float*, float*)";
inline constexpr const char* kBiasGrad =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
    "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> "
    ">(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, "
    "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)";
inline constexpr const char* kAdam =
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<4>, at::native::(anonymous "
    "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, "
    "double, double, double, double, double, bool, float const*, float "
    "const*>(at::native::(anonymous namespace)::TensorListMetadata<4>, ...)";
inline constexpr const char* kAllReduce =
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

inline constexpr const char* kLinearDims = "[[8, 1024, 768], [2304, 768], [2304]]";
inline constexpr const char* kNormDims = "[[8, 1024, 768], [], [768], [768], []]";
inline constexpr const char* kActDims = "[[8, 1024, 3072], []]";

// Forward ops of one block, by sub-module.
inline const std::vector<Op>& attn_forward() {
  static const std::vector<Op> ops = {
      {"aten::layer_norm", kNormDims, {{kLayerNorm, 18}}},
      {"aten::addmm", kLinearDims, {{kGemmTn, 95}}},
      {"aten::_scaled_dot_product_flash_attention",
       "[[8, 12, 1024, 64], [8, 12, 1024, 64], [8, 12, 1024, 64]]",
       {{kFlashFwd, 120}}},
      {"aten::addmm", kLinearDims, {{kGemmTn, 35}}},
      {"aten::add", "[[8, 1024, 768], [8, 1024, 768], []]", {{kAdd, 12}}}};
  return ops;
}
inline const std::vector<Op>& mlp_forward() {
  static const std::vector<Op> ops = {
      {"aten::layer_norm", kNormDims, {{kLayerNorm, 18}}},
      {"aten::addmm", kLinearDims, {{kGemmTn, 140}}},
      {"aten::gelu", kActDims, {{kGelu, 30}}},
      {"aten::addmm", kLinearDims, {{kGemmTn, 140}}},
      {"aten::add", "[[8, 1024, 768], [8, 1024, 768], []]", {{kAdd, 12}}}};
  return ops;
}
// Backward of one block, in the order autograd runs it: grad_fn names.
inline const std::vector<Op>& block_backward() {
  static const std::vector<Op> ops = {
      {"AddmmBackward0", kLinearDims, {{kGemmNn, 140}, {kGemmNt, 150}, {kBiasGrad, 9}}},
      {"GeluBackward0", kActDims, {{kGeluBwd, 40}}},
      {"AddmmBackward0", kLinearDims, {{kGemmNn, 140}, {kGemmNt, 150}, {kBiasGrad, 9}}},
      {"NativeLayerNormBackward0", kNormDims, {{kLayerNormBwd, 22}, {kGammaBeta, 15}}},
      {"AddmmBackward0", kLinearDims, {{kGemmNn, 35}, {kGemmNt, 40}, {kBiasGrad, 6}}},
      {"ScaledDotProductFlashAttentionBackward0",
       "[[8, 12, 1024, 64], [8, 12, 1024, 64]]",
       {{"Memset (Device)", 3, "gpu_memset", 25165824}, {kFlashBwd, 260}}},
      {"AddmmBackward0", kLinearDims, {{kGemmNn, 95}, {kGemmNt, 100}, {kBiasGrad, 9}}},
      {"NativeLayerNormBackward0", kNormDims, {{kLayerNormBwd, 22}, {kGammaBeta, 15}}}};
  return ops;
}

}  // namespace hybrid::bench::synthetic_ops
