// lse over vocabulary shards: lse[m] = log(sum_s exp(partial[s][m])). One thread per row m,
// shards visited in order (coalesced across threads): max first, then the sum.
#include <cuda_runtime.h>

#include <cmath>

#include "core/check.h"
#include "softmax/softmax_common.cuh"
#include "softmax/softmax_params.h"

namespace tachyon::detail {
namespace {

__global__ void __launch_bounds__(256) lse_combine_kernel(const float* partial, long long shards, long long stride,
                                                         long long m, float* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  float mx = -INFINITY;
  for (long long s = 0; s < shards; ++s) mx = max_nan(mx, partial[s * stride + i]);
  float r;
  if (mx == -INFINITY || mx == INFINITY || mx != mx) {
    r = mx;  // every shard -inf (or none); +inf; NaN
  } else {
    float sum = 0.f;
    for (long long s = 0; s < shards; ++s) sum += exp_shifted(partial[s * stride + i], mx);
    r = mx + logf(sum);
  }
  out[i] = r;
}

}  // namespace

void launch_lse_combine(const char* op, const float* partial, std::int64_t shards, std::int64_t row_stride,
                        std::int64_t m, float* out, cudaStream_t stream) {
  const long long blocks = (m + 255) / 256;
  lse_combine_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(partial, shards, row_stride, m, out);
  TACHYON_CHECK_LAUNCH(op);
}

}  // namespace tachyon::detail
