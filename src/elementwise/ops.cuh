#pragma once
// The elementwise operations as functors over fp32. Adding an op: one functor here with
// its arity, one line in elementwise.cu, one declaration in include/tachyon/elementwise.h,
// one fp64 reference in tests/common/reference.h.
#include <cmath>

namespace tachyon::detail {

struct AddOp {
  static constexpr int kArity = 2;
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct MulOp {
  static constexpr int kArity = 2;
  __device__ float operator()(float a, float b) const { return a * b; }
};

struct ReluOp {
  static constexpr int kArity = 1;
  // NaN propagates (fmaxf would drop it).
  __device__ float operator()(float x) const { return x > 0.f ? x : (x != x ? x : 0.f); }
};

// x * sigmoid(x) with the fast exp (ex2.approx) and reciprocal: ~1e-6 relative, and the
// precise expf + IEEE division made gelu/silu issue-bound (0.94x copy) at 16-bit dtypes.
__device__ __forceinline__ float sigmoid_f(float x) { return __frcp_rn(1.f + __expf(-x)); }
__device__ __forceinline__ float silu_f(float x) { return x * sigmoid_f(x); }

struct SiluOp {
  static constexpr int kArity = 1;
  __device__ float operator()(float x) const { return silu_f(x); }
};

struct GeluTanhOp {
  static constexpr int kArity = 1;
  __device__ float operator()(float x) const {
    // 0.5 (1 + tanh(u)) = sigmoid(2u): the same function without the cancellation of
    // 1 + tanh(u) for negative x, which costs fp32 tanh-based versions ~1e-3 relative.
    constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
    float two_u = kTwoSqrt2OverPi * fmaf(0.044715f * x, x * x, x);
    return x * sigmoid_f(two_u);
  }
};

struct SwigluOp {
  static constexpr int kArity = 2;
  __device__ float operator()(float gate, float up) const { return silu_f(gate) * up; }
};

}  // namespace tachyon::detail
