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

// ---- elementwise backward: dy first, then the forward's inputs ------------------------------
// PyTorch's formulas (silu_backward, gelu_backward(approximate="tanh"), autograd through
// silu(gate) * up), so x = +-Inf gives NaN as there. 1 - sigmoid(x) is written sigmoid(-x),
// and 0.5 (1 + tanh u) as sigmoid(2u), equal in exact arithmetic and free of cancellation in
// the tails. Each derivative also has a `_scale`: the magnitude of the terms it sums. Near a
// zero of the derivative (silu' at x = -1.28, gelu' at x = -0.75) the sum cancels, and fp32
// math can only be accurate to a few ulps of that scale (the tests' absolute floor).
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// dy sigmoid(x) (1 + x (1 - sigmoid(x)))
inline double silu_backward(double dy, double x) { return dy * sigmoid(x) * (1.0 + x * sigmoid(-x)); }
inline double silu_backward_scale(double dy, double x) {
  return std::fabs(dy) * sigmoid(x) * (1.0 + std::fabs(x) * sigmoid(-x));
}

// dy d/dx [0.5 x (1 + tanh u)], u = sqrt(2/pi) (x + 0.044715 x^3):
// dy (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'), with 0.5 (1 + tanh u) = sigmoid(2u) and
// 0.5 (1 - tanh^2 u) = 2 sigmoid(2u) sigmoid(-2u).
struct GeluBackwardTerms {
  double first, second;  // 0.5 (1 + tanh u) and 0.5 x (1 - tanh^2 u) u'
};
inline GeluBackwardTerms gelu_tanh_backward_terms(double x) {
  const double c = std::sqrt(2.0 / M_PI), a = 0.044715;
  const double two_u = 2.0 * c * (x + a * x * x * x);
  const double du = c * (1.0 + 3.0 * a * x * x);
  return {sigmoid(two_u), x * 2.0 * sigmoid(two_u) * sigmoid(-two_u) * du};
}
inline double gelu_tanh_backward(double dy, double x) {
  const GeluBackwardTerms t = gelu_tanh_backward_terms(x);
  return dy * (t.first + t.second);
}
inline double gelu_tanh_backward_scale(double dy, double x) {
  const GeluBackwardTerms t = gelu_tanh_backward_terms(x);
  return std::fabs(dy) * (std::fabs(t.first) + std::fabs(t.second));
}

// y = silu(gate) up: dgate = silu_backward(dy up, gate), dup = dy silu(gate).
inline double swiglu_backward_gate(double dy, double gate, double up) { return silu_backward(dy * up, gate); }
inline double swiglu_backward_gate_scale(double dy, double gate, double up) {
  return silu_backward_scale(dy * up, gate);
}
inline double swiglu_backward_up(double dy, double gate, double /*up*/) { return dy * silu(gate); }

}  // namespace tachyon::ref

namespace tachyon::ref {

// ---- norms (rows of a dense M x N matrix) -----------------------------------------------

struct NormForwardRef {
  std::vector<double> y, mean, rstd;
};

// RMSNorm (layer_norm = false) or LayerNorm forward in fp64. `weight`/`bias` empty = absent.
inline NormForwardRef norm_forward(bool layer_norm, std::int64_t M, std::int64_t N, const std::vector<double>& x,
                                   const std::vector<double>& weight, const std::vector<double>& bias, double eps,
                                   double weight_offset = 0.0) {
  NormForwardRef r;
  r.y.resize(static_cast<std::size_t>(M * N));
  r.mean.assign(static_cast<std::size_t>(M), 0.0);
  r.rstd.resize(static_cast<std::size_t>(M));
  for (std::int64_t i = 0; i < M; ++i) {
    const double* xr = &x[i * N];
    double mean = 0.0, ms = 0.0;
    if (layer_norm) {
      for (std::int64_t j = 0; j < N; ++j) mean += xr[j];
      mean /= static_cast<double>(N);
      for (std::int64_t j = 0; j < N; ++j) ms += (xr[j] - mean) * (xr[j] - mean);
    } else {
      for (std::int64_t j = 0; j < N; ++j) ms += xr[j] * xr[j];
    }
    const double rstd = 1.0 / std::sqrt(ms / static_cast<double>(N) + eps);
    r.mean[i] = mean;
    r.rstd[i] = rstd;
    for (std::int64_t j = 0; j < N; ++j) {
      const double w = weight.empty() ? 1.0 : weight[j] + weight_offset;
      const double b = bias.empty() ? 0.0 : bias[j];
      r.y[i * N + j] = (xr[j] - mean) * rstd * w + b;
    }
  }
  return r;
}

struct NormBackwardRef {
  std::vector<double> dx, dw, db;
  std::vector<double> dw_abs, db_abs;  // sums of |terms|: the scale of rounding in the column sums
  std::vector<double> dx_scale;        // per row: rstd * (|wdy| + |xhat| |mean(xhat wdy)|) summed magnitude
};

// Gradients of RMSNorm / LayerNorm given the forward's saved mean and rstd (as the kernel
// receives them) and the upstream gradient dy.
inline NormBackwardRef norm_backward(bool layer_norm, std::int64_t M, std::int64_t N, const std::vector<double>& x,
                                     const std::vector<double>& weight, const std::vector<double>& mean,
                                     const std::vector<double>& rstd, const std::vector<double>& dy,
                                     const std::vector<double>& dresidual, double weight_offset = 0.0) {
  NormBackwardRef r;
  r.dx.resize(static_cast<std::size_t>(M * N));
  r.dw.assign(static_cast<std::size_t>(N), 0.0);
  r.db.assign(static_cast<std::size_t>(N), 0.0);
  r.dw_abs.assign(static_cast<std::size_t>(N), 0.0);
  r.db_abs.assign(static_cast<std::size_t>(N), 0.0);
  r.dx_scale.assign(static_cast<std::size_t>(M), 0.0);
  for (std::int64_t i = 0; i < M; ++i) {
    const double mu = layer_norm ? mean[i] : 0.0, rs = rstd[i];
    double s_wdy = 0.0, s_xwdy = 0.0;
    for (std::int64_t j = 0; j < N; ++j) {
      const double w = weight.empty() ? 1.0 : weight[j] + weight_offset;
      const double xhat = (x[i * N + j] - mu) * rs;
      const double wdy = dy[i * N + j] * w;
      s_wdy += wdy;
      s_xwdy += xhat * wdy;
    }
    const double m_wdy = layer_norm ? s_wdy / static_cast<double>(N) : 0.0;
    const double m_xwdy = s_xwdy / static_cast<double>(N);
    double scale = 0.0;
    for (std::int64_t j = 0; j < N; ++j) {
      const double w = weight.empty() ? 1.0 : weight[j] + weight_offset;
      const double xhat = (x[i * N + j] - mu) * rs;
      const double g = dy[i * N + j];
      r.dx[i * N + j] = rs * (g * w - m_wdy - xhat * m_xwdy) + (dresidual.empty() ? 0.0 : dresidual[i * N + j]);
      scale = std::fmax(scale, rs * (std::fabs(g * w) + std::fabs(m_wdy) + std::fabs(xhat * m_xwdy)));
      r.dw[j] += g * xhat;
      r.db[j] += g;
      r.dw_abs[j] += std::fabs(g * xhat);
      r.db_abs[j] += std::fabs(g);
    }
    r.dx_scale[i] = scale;
  }
  return r;
}

}  // namespace tachyon::ref
