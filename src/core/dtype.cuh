#pragma once
// Device-side dtype plumbing: the C++ type for each DType, conversion to and from fp32
// (all math is fp32), and the one dispatch from a runtime DType to a template.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <utility>

#include "tachyon/error.h"
#include "tachyon/tensor.h"

namespace tachyon::detail {

using bf16 = __nv_bfloat16;
using half = __half;

template <class T>
struct TypeTag {
  using type = T;
};

template <class T>
inline constexpr DType dtype_of = DType::f32;
template <>
inline constexpr DType dtype_of<half> = DType::f16;
template <>
inline constexpr DType dtype_of<bf16> = DType::bf16;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ half from_float<half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) { return __float2bfloat16_rn(v); }

// Calls f(TypeTag<T>{}) for the floating dtype d. Every kernel family dispatches here, so
// adding a dtype is one case.
template <class F>
decltype(auto) dispatch_float(const char* op, DType d, F&& f) {
  switch (d) {
    case DType::f32: return std::forward<F>(f)(TypeTag<float>{});
    case DType::f16: return std::forward<F>(f)(TypeTag<half>{});
    case DType::bf16: return std::forward<F>(f)(TypeTag<bf16>{});
    default: throw Error(std::string(op) + ": dtype " + dtype_name(d) + " has no kernel");
  }
}

}  // namespace tachyon::detail
