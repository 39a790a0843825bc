#pragma once
// Fast fp32 math shared by the kernels: 2^x and 1/x as single MUFU instructions, the
// sigmoid built on them, and the gelu-tanh constants. The one definition of each; the
// activations themselves (silu, gelu-tanh, their backwards) are in elementwise/ops.cuh.
//
// The ftz forms of ex2.approx / rcp.approx are one MUFU each. The non-ftz ones (what __expf
// and __frcp_rn / __fdividef compile to without -use_fast_math) wrap the MUFU in a denormal
// range check and rescale (IEEE rcp adds Newton steps and a slow path): in the GEMM's
// bias + silu epilogue that tripled the instructions per element. Accuracy ~2 ulp (ex2) and
// ~1 ulp (rcp); ftz only changes results whose magnitude is below 2^-126.
#include <cmath>

namespace tachyon::detail {

inline constexpr float kLog2e = 1.4426950408889634f;

// 2^x with one MUFU.EX2; results below 2^-126 flush to 0 (exp2f would keep them with three
// more instructions per call).
__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// 2^x with MUFU.EX2 and the non-ftz range check: results below 2^-126 kept (three more
// instructions than fast_exp2).
__device__ __forceinline__ float exp2_approx(float x) { return exp2f(x); }

// 1/x with one MUFU.RCP.
__device__ __forceinline__ float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// sigmoid(t) = 1 / (1 + 2^(-t log2 e)) in exactly two MUFU instructions. t -> -inf gives
// rcp(inf) = 0, t -> +inf gives 1, NaN stays NaN.
__device__ __forceinline__ float fast_sigmoid(float t) { return fast_rcp(1.f + fast_exp2(-kLog2e * t)); }

// sigmoid(t) from s = e^-|t| in [0, 1]: 1 / (1 + s) for t >= 0, s / (1 + s) below. 1 + s lies in
// [1, 2], so one MUFU.RCP (ftz changes nothing there), and s takes the non-ftz ex2 (its range
// check): no flush to 0 below 2^-126. ~3e-7 relative in ~8 instructions — the elementwise ops'
// form. (1 / (1 + e^-t) with __expf and __frcp_rn, the IEEE reciprocal's Newton steps and
// slow-path branch an element, took ~17 instructions an element; the H200 silu forward ran at
// 0.74-0.83x copy with it; the H100 gelu gains 4-7 %: docs/perf/elementwise.md.)
__device__ __forceinline__ float sigmoid(float t) {
  const float s = exp2_approx(-fabsf(t) * kLog2e);
  const float r = fast_rcp(1.f + s);
  return t >= 0.f ? r : s * r;  // NaN: s * r
}

// gelu-tanh = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), is evaluated as
// x sigmoid(2u): 0.5 (1 + tanh(u)) = sigmoid(2u), the same function without the cancellation
// of 1 + tanh(u) for negative x (~1e-3 relative in fp32 tanh-based forms).
inline constexpr float kGeluTwoSqrt2OverPi = 1.5957691216057308f;  // 2 sqrt(2/pi): 2u = this (x + a x^3)
inline constexpr float kGeluCubic = 0.044715f;                     // a
__device__ __forceinline__ float gelu_two_u(float x) { return kGeluTwoSqrt2OverPi * fmaf(kGeluCubic * x, x * x, x); }

}  // namespace tachyon::detail
