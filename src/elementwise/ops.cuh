#pragma once
// The elementwise operations as functors over fp32. Adding an op: one functor here with
// its arity (kArity inputs, 1 to 3) and its number of outputs (kOutputs, 1 or 2), one value
// in ElementwiseOp (elementwise_launch.h), one case in elementwise.cu's launch_elementwise, one
// entry point in elementwise.cpp, one declaration in include/tachyon/elementwise.h, one fp64 reference
// in tests/common/reference.h. A one-output functor returns its float; a two-output functor
// returns Results2, its outputs in the order the entry point passes them.
#include <cmath>

#include "core/fast_math.cuh"

namespace tachyon::detail {

struct Results2 {
  float first, second;
};

struct AddOp {
  static constexpr int kArity = 2;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct MulOp {
  static constexpr int kArity = 2;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float a, float b) const { return a * b; }
};

struct ReluOp {
  static constexpr int kArity = 1;
  static constexpr int kOutputs = 1;
  // NaN propagates (fmaxf would drop it).
  __device__ float operator()(float x) const { return x > 0.f ? x : (x != x ? x : 0.f); }
};

// x * sigmoid(x), core's sigmoid (fast_math.cuh): the fast exp and reciprocal; the precise
// expf and IEEE division made silu and gelu issue-bound (0.94x copy) at 16-bit dtypes.
__device__ __forceinline__ float silu_f(float x) { return x * sigmoid(x); }

struct SiluOp {
  static constexpr int kArity = 1;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float x) const { return silu_f(x); }
};

// gelu-tanh as x sigmoid(2u) (core/fast_math.cuh, gelu_two_u).
struct GeluTanhOp {
  static constexpr int kArity = 1;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float x) const { return x * sigmoid(gelu_two_u(x)); }
};

struct SwigluOp {
  static constexpr int kArity = 2;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float gate, float up) const { return silu_f(gate) * up; }
};

// ---- backward passes: dy first, then the forward's inputs -------------------------------
// PyTorch's formulas, evaluated in its order, so NaN and Inf come out as PyTorch's do
// (x = +-Inf gives NaN: Inf times a zero sigmoid term). Near a zero of the derivative
// (silu' at x = -1.28, gelu' at x = -0.75) the sum in the second factor cancels: fp32 is
// accurate there to a few ulps of the terms, not of the result.

// dy silu'(x) = dy s (1 + x (1 - s)), given s = sigmoid(x).
__device__ __forceinline__ float silu_backward_f(float dy, float x, float s) { return dy * s * fmaf(x, 1.f - s, 1.f); }

struct SiluBackwardOp {
  static constexpr int kArity = 2;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float dy, float x) const { return silu_backward_f(dy, x, sigmoid(x)); }
};

// d/dx x sigmoid(2u) = s (1 + x (1 - s) d(2u)/dx), s = sigmoid(2u),
// d(2u)/dx = 2 sqrt(2/pi) (1 + 3 a x^2): PyTorch's 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'
// with 0.5 (1 + tanh u) = s and 0.5 (1 - tanh^2 u) = 2 s (1 - s).
struct GeluTanhBackwardOp {
  static constexpr int kArity = 2;
  static constexpr int kOutputs = 1;
  __device__ float operator()(float dy, float x) const {
    const float s = sigmoid(gelu_two_u(x));
    const float dtwo_u = kGeluTwoSqrt2OverPi * fmaf(3.f * kGeluCubic * x, x, 1.f);
    return dy * s * fmaf(x * (1.f - s), dtwo_u, 1.f);
  }
};

// y = silu(gate) up: dgate = (dy up) silu'(gate), dup = dy silu(gate) (autograd's chain
// through silu then mul); one sigmoid for both.
struct SwigluBackwardOp {
  static constexpr int kArity = 3;
  static constexpr int kOutputs = 2;
  __device__ Results2 operator()(float dy, float gate, float up) const {
    const float s = sigmoid(gate);
    return {silu_backward_f(dy * up, gate, s), dy * (gate * s)};
  }
};

}  // namespace tachyon::detail
