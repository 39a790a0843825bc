// The small kernels around cross-entropy: the non-ignored row count (for mean), the fixed-
// order loss sum (sum / mean), deterministic and without float atomics. The row kernel after
// the count and the sum after the row kernel launch programmatically: each is scheduled under
// the tail of the kernel before it and waits for that kernel's output where it reads it, so the
// three launches of a mean cost about one. (docs/perf/cross_entropy.md#the-loss-reduction)
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/grid_dependency.cuh"
#include "core/host_device.h"
#include "core/launch.h"
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
  allow_dependent_launch();  // the row kernel: it waits for the counts where it needs them
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

// One CTA: thread t adds the row-loss quads t, t + 1024, ... in order, kQuadsInFlight loads
// in flight (the losses were just written: L2 round trips, one after another in a plain loop),
// then the rows past the last whole quad, then a fixed tree. fp64 accumulation.
constexpr int kReduceThreads = 1024;
constexpr int kQuadsInFlight = 4;
__global__ void __launch_bounds__(kReduceThreads) loss_reduce_kernel(const float* row_loss, long long rows,
                                                                    const int* parts, float* out) {
  wait_prior_grid();  // the row kernel's losses
  const float4* quads = reinterpret_cast<const float4*>(row_loss);  // 16-byte aligned workspace
  const long long nq = rows / 4;
  const long long t = threadIdx.x;
  double s = 0.0;
  for (long long q0 = t; q0 < nq; q0 += static_cast<long long>(kReduceThreads) * kQuadsInFlight) {
    float4 f[kQuadsInFlight];
#pragma unroll
    for (int j = 0; j < kQuadsInFlight; ++j) {
      const long long q = q0 + static_cast<long long>(j) * kReduceThreads;
      f[j] = q < nq ? quads[q] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < kQuadsInFlight; ++j) {
      s += f[j].x;
      s += f[j].y;
      s += f[j].z;
      s += f[j].w;
    }
  }
  if (t < rows - nq * 4) s += static_cast<double>(row_loss[nq * 4 + t]);
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
  launch_programmatic(op, loss_reduce_kernel, dim3(1), dim3(kReduceThreads), stream, row_loss,
                      static_cast<long long>(rows), parts, out);
}

}  // namespace tachyon::detail
