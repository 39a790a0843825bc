#pragma once
// The GEMM path for what TMA cannot describe: operands whose base or row stride is not a
// multiple of 16 bytes (K = 1, 127, 129, 4099 in bf16 ...), and K = 0. Plain loads of any
// alignment into shared memory, fp32 FMA on 64 x 64 tiles, the same epilogue math as the
// TMA kernel. Correct for every layout; roughly 10-20x slower than the tensor-core path.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gemm/gemm_params.h"
#include "tachyon/tensor.h"

namespace tachyon::detail::gemm {

struct FallbackParams {
  const void* a = nullptr;
  std::int64_t lda = 0;  // A (m, k): element (i, k) at a[i * lda + k]
  const void* b = nullptr;
  std::int64_t b_n_stride = 0, b_k_stride = 0;  // element (n, k) at b[n * b_n_stride + k * b_k_stride]
  int m = 0, n = 0, k = 0;
  EpilogueParams epi;  // row-major D and C (no swap)
};

void launch_gemm_fallback(const char* op, DType in, DType out, const FallbackParams& p, cudaStream_t stream);

}  // namespace tachyon::detail::gemm
