#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>

#include "common/device_fill.h"

namespace tachyon::test {

namespace {
__host__ __device__ inline double pattern(std::int64_t i) {
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  int v = static_cast<int>((h >> 40) % 511) - 255;  // -255..255: exact in bf16 (8 bits)
  return v / 64.0;
}

template <class T>
__global__ void fill_kernel(T* p, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<T>(static_cast<float>(pattern(i)));
}
}  // namespace

double pattern_value(std::int64_t i) { return pattern(i); }

void fill_pattern(const TensorView& t) {
  std::int64_t n = t.numel();
  switch (t.dtype) {
    case DType::f32: fill_kernel<<<4096, 256>>>(static_cast<float*>(t.data), n); break;
    case DType::f16: fill_kernel<<<4096, 256>>>(static_cast<__half*>(t.data), n); break;
    case DType::bf16: fill_kernel<<<4096, 256>>>(static_cast<__nv_bfloat16*>(t.data), n); break;
    default: throw std::runtime_error("fill_pattern: dtype");
  }
  if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("fill_pattern: kernel failed");
}

}  // namespace tachyon::test
