#pragma once
// Per-row pieces of the cross-entropy kernels: the target, the loss, the gradient of a chunk.
#include "core/grid_dependency.cuh"
#include "softmax/softmax_common.cuh"
#include "softmax/softmax_params.h"

namespace tachyon::detail {

struct TargetInfo {
  int col;       // the target column when it is in [0, n) and not ignored, else -1
  bool ignored;  // target == ignore_index
  bool bad;      // outside [0, n) and not ignore_index: NaN loss and gradient row
};

__device__ __forceinline__ TargetInfo load_target(const void* target, bool i64, long long row,
                                                  long long ignore_index, int n) {
  const long long t = i64 ? static_cast<const long long*>(target)[row] : static_cast<const int*>(target)[row];
  TargetInfo r;
  r.ignored = t == ignore_index;
  const bool in_range = t >= 0 && t < n;
  r.bad = !r.ignored && !in_range;
  r.col = (!r.ignored && in_range) ? static_cast<int>(t) : -1;
  return r;
}

// grad / (rows not ignored), from the count kernel's partial counts. Every lane of the warp
// must call it (it sums with shuffles); warps do it independently, no CTA barrier. The row
// kernel is launched programmatically after the count kernel (cross_entropy_reduce.cu): it
// waits for the counts here, its loads already in flight.
__device__ __forceinline__ float counted_mean_scale(const int* parts, float grad) {
  wait_prior_grid();
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int c = 0;
#pragma unroll
  for (int i = lane; i < kCountParts; i += 32) c += parts[i];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  return grad / static_cast<float>(c);
}

// loss = (1 - eps) (lse - x[t]) + eps (lse - mean(x)), with lse - v = (m - v) + log(s):
// the differences first, so a dominant logit keeps its small loss accurate. sum_dev is
// sum(x - m) over the row (ShiftedSum), for the same reason.
__device__ __forceinline__ float row_loss(const RowSoftmax& r, const TargetInfo& tg, float xt, float sum_dev,
                                          float eps, int n) {
  if (tg.ignored) return 0.f;
  if (tg.bad) return NAN;
  float loss = (r.m - xt) + r.log_s;
  if (eps != 0.f) loss = (1.f - eps) * loss + eps * (r.log_s - sum_dev / static_cast<float>(n));
  return loss;
}

// dx = g * (softmax(x) - eps / n - (1 - eps) onehot(t)) = a exp(x - m) + b - g (1 - eps) [t],
// with a = g / s: exp(x - m) as exp_shifted (the difference first), or, for 16-bit rows whose
// max passes fast_exp_row, as their statistics take it: exp2 of one FFMA, x log2e - m log2e
// (chunk<true> on fast(): one instruction an element fewer; past that bound the rounding of
// m log2e would show). The exact form costs the same instructions as
// exp2((x - m) log2e - log2 s) * g and keeps one value fewer live: the 8-chunk 16-bit kernel
// stays at 64 registers without spilling.
// Ignored rows: g = 0 (so exact zeros, NaN where the row has NaN — as PyTorch's
// log_softmax backward gives); bad targets: g = NaN.
struct RowGrad {
  float m, a, b, hot;  // a = g / s
  int col;
  __device__ static float row_scale(const TargetInfo& tg, float grad) {
    return tg.ignored ? 0.f : tg.bad ? NAN : grad;
  }
  // -g eps / n. Without smoothing no division: FCHK sends a zero dividend down the IEEE
  // division's slow path, a call of ~40 instructions every row (ncu, H100).
  __device__ static float uniform_part(float g, float eps, int n) {
    return eps == 0.f ? 0.f : -g * (eps / static_cast<float>(n));
  }
  __device__ static RowGrad make(const RowSoftmax& r, const TargetInfo& tg, float grad, float eps, int n) {
    const float g = row_scale(tg, grad);
    return {r.m, r.inv_s * g, uniform_part(g, eps, n), g * (1.f - eps), tg.col};
  }
  // From a saved lse instead of (m, s): p = exp(x - lse).
  __device__ static RowGrad from_lse(float lse, const TargetInfo& tg, float grad, float eps, int n) {
    const float g = row_scale(tg, grad);
    return {lse, g, uniform_part(g, eps, n), g * (1.f - eps), tg.col};
  }
  // For chunk<true>: m as c = m log2e (exp_fast's argument).
  __device__ RowGrad fast() const { return {m * kLog2e, a, b, hot, col}; }
  template <bool kFast = false, class T, int V>
  __device__ __forceinline__ void chunk(const Vec<T, V>& h, int c0, float (&out)[V]) const {
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = fmaf(kFast ? exp_fast(elem(h, e), m) : exp_shifted(elem(h, e), m), a, b);
    const unsigned d = static_cast<unsigned>(col - c0);
    if (col >= 0 && d < static_cast<unsigned>(V)) {
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (d == static_cast<unsigned>(e)) out[e] -= hot;
    }
  }
};

}  // namespace tachyon::detail
