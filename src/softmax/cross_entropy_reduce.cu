// The small kernels around cross-entropy: the non-ignored row count (for mean), the fixed-
// order loss sum (sum / mean), deterministic and without float atomics.
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/host_device.h"
#include "softmax/softmax_params.h"

namespace tachyon::detail {
namespace {

constexpr int kThreads = 256;

template <int kThreadsPerBlock, class T>
__device__ __forceinline__ T block_sum(T v) {
  __shared__ T warp_sums[kThreadsPerBlock / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  T total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreadsPerBlock / 32; ++w) total += warp_sums[w];  // fixed order
  return total;  // valid in thread 0
}

// Block b counts rows [b * per, (b + 1) * per); all kCountParts blocks write their part.
__global__ void __launch_bounds__(kThreads) count_targets_kernel(const void* target, bool i64, long long rows,
                                                                 long long ignore_index, int* parts) {
  const long long per = ceil_div(rows, kCountParts);
  const long long begin = blockIdx.x * per;
  const long long end = begin + per < rows ? begin + per : rows;
  int c = 0;
  for (long long i = begin + threadIdx.x; i < end; i += kThreads) {
    const long long t = i64 ? static_cast<const long long*>(target)[i] : static_cast<const int*>(target)[i];
    c += t != ignore_index;
  }
  c = block_sum<kThreads>(c);
  if (threadIdx.x == 0) parts[blockIdx.x] = c;
}

// One CTA: thread i adds rows i, i + 1024, ... in order, then a fixed tree. fp64 accumulation.
constexpr int kReduceThreads = 1024;
__global__ void __launch_bounds__(kReduceThreads) loss_reduce_kernel(const float* row_loss, long long rows,
                                                                    const int* parts, float* out) {
  double s = 0.0;
  for (long long i = threadIdx.x; i < rows; i += kReduceThreads) s += static_cast<double>(row_loss[i]);
  s = block_sum<kReduceThreads>(s);
  if (threadIdx.x == 0) {
    if (parts) {
      long long c = 0;
      for (int i = 0; i < kCountParts; ++i) c += parts[i];
      s /= static_cast<double>(c);  // 0 / 0 = NaN when every row is ignored, as PyTorch
    }
    out[0] = static_cast<float>(s);
  }
}

}  // namespace

void launch_count_targets(const char* op, const void* target, bool target_i64, std::int64_t rows,
                          std::int64_t ignore_index, int* parts, cudaStream_t stream) {
  count_targets_kernel<<<kCountParts, kThreads, 0, stream>>>(target, target_i64, rows, ignore_index, parts);
  TACHYON_CHECK_LAUNCH(op);
}

void launch_loss_reduce(const char* op, const float* row_loss, std::int64_t rows, const int* parts, float* out,
                        cudaStream_t stream) {
  loss_reduce_kernel<<<1, kReduceThreads, 0, stream>>>(row_loss, rows, parts, out);
  TACHYON_CHECK_LAUNCH(op);
}

}  // namespace tachyon::detail
