#pragma once
// Device helpers shared by the softmax and cross-entropy kernels: exponentials through ex2,
// NaN-propagating maxima, and the per-thread online (max, sum exp) statistics that one
// row_reduce over MaxSumExp turns into the row's.
//
// Statistics: m = max over the thread's values (NaN if any is NaN), s = sum exp(v - m)
// (0 when m = -inf: nothing but masked values). MaxSumExp combines them across the team.
// Then lse = m + log(s); softmax = exp(v - m) / s; log_softmax = (v - m) - log(s).
// NaN anywhere makes s NaN for the row; an all -inf row has m = -inf, s = 0 and so
// NaN outputs (-inf - -inf), as in PyTorch.
#include <cmath>
#include <type_traits>

#include "core/dtype.cuh"
#include "core/fast_math.cuh"
#include "core/reduce.cuh"
#include "core/row_access.cuh"
#include "core/vec.cuh"

namespace tachyon::detail {

// max that propagates NaN (fmaxf drops it): max.NaN.f32, one FMNMX.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// exp(v - m) / 2^c for v <= m, with one MUFU.EX2 (fast_exp2): the difference v - m first
// (exact when v is near m, where the result matters), then one FFMA (v - m) * log2e - c. The one form of every
// exponential of the softmax and cross-entropy kernels (c: log2 of a divisor folded into the
// exponent, e.g. the row's sum). Never v * log2e - m * log2e in one FFMA: the rounding of
// m * log2e is an absolute error of about |m| * 6e-8 in the exponent, a relative error of the
// result growing with |m| (fp16 logits near 65000: 4e-3 against fp64, 8x an fp16 ulp); the
// difference first costs one instruction an element and keeps a few ulp at any magnitude.
__device__ __forceinline__ float exp_shifted(float v, float m) { return fast_exp2((v - m) * kLog2e); }
__device__ __forceinline__ float exp_shifted(float v, float m, float c) { return fast_exp2(fmaf(v - m, kLog2e, -c)); }

// The statistics of 16-bit rows whose max m has |m| <= kFastExpMax take exp2(v * log2e - c) in
// one FFMA, c = m * log2e: the roundings of log2e and c are then under ~6e-6 of the exponent
// (v within 88 of m, where exp(v - m) is not 0), against exp_shifted's few ulp, and far below a
// 16-bit result's ulp or the fp32 loss's tolerance. The FADD saved an element is what 16-bit
// rows are bound by on the H200 (docs/perf/softmax.md). NaN m: false.
inline constexpr float kFastExpMax = 32.f;
__device__ __forceinline__ bool fast_exp_row(float m) { return fabsf(m) <= kFastExpMax; }
__device__ __forceinline__ float exp_fast(float v, float c) { return fast_exp2(fmaf(v, kLog2e, -c)); }

template <class T, int V>
__device__ __forceinline__ Vec<T, V> fill_vec(float f) {
  Vec<T, V> out;
  const T t = from_float<T>(f);
#pragma unroll
  for (int e = 0; e < V; ++e) out.v[e] = t;
  return out;
}

// 16-bit pairs as one packed value: max over a row's chunks stays packed (HMNMX2 .NAN: half
// the instructions, no conversions) until the last step.
template <class T>
using Packed2 = std::conditional_t<std::is_same_v<T, bf16>, __nv_bfloat162, __half2>;

template <class T, int V>
__device__ __forceinline__ Packed2<T> chunk_max_packed(const Vec<T, V>& h, Packed2<T> acc) {
  using T2 = Packed2<T>;
  T2 r[V / 2];
#pragma unroll
  for (int i = 0; i < V / 2; ++i) r[i] = reinterpret_cast<const T2*>(&h)[i];
#pragma unroll
  for (int w = 1; w < V / 2; w *= 2)
#pragma unroll
    for (int i = 0; i + w < V / 2; i += 2 * w) r[i] = __hmax2_nan(r[i], r[i + w]);
  return __hmax2_nan(acc, r[0]);
}

template <class T>
__device__ __forceinline__ float unpack_max(Packed2<T> v) {
  return max_nan(to_float(v.x), to_float(v.y));
}

// NaN-propagating max of a chunk; pairwise, independent chains for the scheduler.
template <class T, int V>
__device__ __forceinline__ float chunk_max(const Vec<T, V>& h) {
  if constexpr (sizeof(T) == 2) {
    const T lowest = from_float<T>(-INFINITY);
    return unpack_max<T>(chunk_max_packed(h, Packed2<T>{lowest, lowest}));
  } else {
    float r[V];
#pragma unroll
    for (int e = 0; e < V; ++e) r[e] = elem(h, e);
#pragma unroll
    for (int w = 1; w < V; w *= 2)
#pragma unroll
      for (int e = 0; e + w < V; e += 2 * w) r[e] = max_nan(r[e], r[e + w]);
    return r[0];
  }
}

// sum of exp(v - m) over a chunk; kFast: exp_fast, `m` then being c = max * log2e (fast_exp_row).
template <bool kFast = false, class T, int V>
__device__ __forceinline__ float chunk_sum_exp(const Vec<T, V>& h, float m) {
  float r[V];
#pragma unroll
  for (int e = 0; e < V; ++e) r[e] = kFast ? exp_fast(elem(h, e), m) : exp_shifted(elem(h, e), m);
#pragma unroll
  for (int w = 1; w < V; w *= 2)
#pragma unroll
    for (int e = 0; e + w < V; e += 2 * w) r[e] += r[e + w];
  return r[0];
}

// sum(x - ref) over a row, for label smoothing's mean(x) term: a plain fp32 sum of logits near
// 1e6 loses the digits that (max - mean) keeps. Each thread sums differences to a reference at
// or above every value it has added (its running max), rebasing the sum when the max grows;
// x == ref counts 0, so -inf values against a -inf reference stay finite until a finite max
// makes them -inf (as sum(x) would be).
struct ShiftedSum {
  float ref = -INFINITY, s = 0.f;
  float cnt = 0.f;  // exact to 2^24 values a thread
  __device__ void rebase(float m) {
    if (m != ref && cnt != 0.f) s += cnt * (ref - m);
    ref = m;
  }
  __device__ void add(float v) {
    s += v == ref ? 0.f : v - ref;
    cnt += 1.f;
  }
  // The thread's sum(x - m) for m at or above ref (the row's max).
  __device__ float relative_to(float m) const { return m == ref || cnt == 0.f ? s : s + cnt * (ref - m); }
  // The chunk's values inside [0, n) (the rest hold the -inf fill), all at or below ref.
  template <class T, int V>
  __device__ __forceinline__ void add_inside(const Vec<T, V>& h, int c0, int n) {
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (chunk_inside(c0, V, n) || (c0 + e >= 0 && c0 + e < n)) add(elem(h, e));
  }
};

// Statistics of chunks held in registers (the resident kernels). `extra` is one more value
// of the row folded into the max only (cross-entropy's logits[target], so that its load
// completes before the row's reduction — see cross_entropy_fwd.cu); -inf when none. `live`:
// only chunks [0, live) hold row values (a streaming group at the row's end), the others
// only the -inf fill: their exponentials are skipped (all kItems for the resident kernels).
template <class T, int V, int kItems>
__device__ __forceinline__ Float2 local_stats(const Vec<T, V> (&h)[kItems], float extra = -INFINITY,
                                              int live = kItems) {
  float m = extra;
  if constexpr (sizeof(T) == 2) {
    Packed2<T> acc = reinterpret_cast<const Packed2<T>*>(&h[0])[0];
#pragma unroll
    for (int k = 0; k < kItems; ++k) acc = chunk_max_packed(h[k], acc);
    m = max_nan(m, unpack_max<T>(acc));
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) m = max_nan(m, chunk_max(h[k]));
  }
  float s = 0.f;
  if (sizeof(T) == 2 && fast_exp_row(m)) {
    const float c = m * kLog2e;
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (k < live) s += chunk_sum_exp<true>(h[k], c);
  } else if (m != -INFINITY) {
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (k < live) s += chunk_sum_exp(h[k], m);
  }
  return {m, s};
}

// Running statistics over chunks visited one at a time (the streaming kernels).
struct OnlineStats {
  float m = -INFINITY, s = 0.f;
  template <class T, int V>
  __device__ __forceinline__ void add(const Vec<T, V>& h) {
    const float mn = max_nan(m, chunk_max(h));
    if (mn == -INFINITY) return;
    s = s * exp_shifted(m, mn) + chunk_sum_exp(h, mn);  // m = -inf: s = 0 * 0
    m = mn;
  }
  __device__ __forceinline__ void add_max(float v) {  // a value folded into the max only
    const float mn = max_nan(m, v);
    if (mn == -INFINITY) return;
    s = s * exp_shifted(m, mn);
    m = mn;
  }
  __device__ Float2 pair() const { return {m, s}; }
};

// The row's (max, sum exp) reduction: split butterflies for 16-bit rows (reduce.cuh,
// MaxSumExpSplit: one exponential a lane, not two a level): the 16-bit rows are issue-bound on
// the H200 (softmax forward +2 to +6 % at 32-262K columns, docs/perf/softmax.md). The fp32
// kernels keep the pairwise combine, with which they stay unspilled.
template <class T>
using RowStatsOp = std::conditional_t<sizeof(T) == 2, MaxSumExpSplit, MaxSumExp>;

// What the output passes need from the row's (max, sum). For 16-bit storage the division by
// the sum folds into the exponential: exp2((v - m) * log2e - log2(s)).
struct RowSoftmax {
  float m, inv_s, log_s, log2_s;
  __device__ static RowSoftmax make(Float2 st) { return {st.a, 1.f / st.b, logf(st.b), log2f(st.b)}; }
  __device__ float lse() const { return m + log_s; }
  template <class T, bool kExact = (sizeof(T) == 4)>
  __device__ float prob(float v) const {
    if constexpr (kExact) return exp_shifted(v, m) * inv_s;
    else return exp_shifted(v, m, log2_s);
  }
  __device__ float log_prob(float v) const { return (v - m) - log_s; }
};

}  // namespace tachyon::detail
