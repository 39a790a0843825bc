#pragma once
// fp64 reference implementations. Every kernel is checked against one of these; they are
// written for clarity, not speed, and follow PyTorch's definitions (including NaN/Inf).
#include <cmath>
#include <cstdint>
#include <vector>

namespace tachyon::ref {

// ---- elementwise --------------------------------------------------------------------
inline double add(double a, double b) { return a + b; }
inline double mul(double a, double b) { return a * b; }
inline double relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }
inline double gelu_tanh(double x) {
  // 0.5 x (1 + tanh(u)) written as x sigmoid(2u): equal in exact arithmetic, and free of
  // the cancellation that makes even fp64 lose the tail for very negative x.
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}
inline double swiglu(double gate, double up) { return silu(gate) * up; }

}  // namespace tachyon::ref
