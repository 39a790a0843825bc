#pragma once
// fp64 references for softmax / log-softmax (forward, backward) and cross-entropy (loss, lse,
// gradient, reductions, lse combine), following PyTorch's definitions including NaN / Inf:
// softmax = exp(x - max) / sum, a NaN anywhere in a row makes the whole row NaN (PyTorch's
// max propagates NaN), an all -inf row gives NaN.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tachyon::ref {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct RowStats {
  double max = -kInf, sum = 0;  // sum of exp(x - max)
  double lse() const { return max + std::log(sum); }
};

// NaN-propagating max, then sum of exp(x - max) (NaN with a NaN or a +inf in the row).
inline RowStats row_stats(const double* x, std::int64_t n) {
  RowStats s;
  bool nan = false;
  for (std::int64_t j = 0; j < n; ++j) {
    if (std::isnan(x[j])) nan = true;
    else s.max = std::fmax(s.max, x[j]);
  }
  if (nan) return {kNaN, kNaN};
  if (s.max == -kInf) return s;  // all -inf: lse = -inf, softmax = exp(-inf - -inf) / 0 = NaN
  for (std::int64_t j = 0; j < n; ++j) s.sum += std::exp(x[j] - s.max);  // +inf rows: NaN
  return s;
}

// Softmax (log = false) or log-softmax over rows of a dense M x N matrix.
inline std::vector<double> softmax(std::int64_t M, std::int64_t N, const std::vector<double>& x, bool log) {
  std::vector<double> y(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i) {
    const double* xr = &x[i * N];
    const RowStats s = row_stats(xr, N);
    const double log_sum = std::log(s.sum);
    for (std::int64_t j = 0; j < N; ++j)
      y[i * N + j] = log ? (xr[j] - s.max) - log_sum : std::exp(xr[j] - s.max) / s.sum;
  }
  return y;
}

struct SoftmaxBackwardRef {
  std::vector<double> dx;
  std::vector<double> scale;  // per row: the magnitude of the terms (for tolerances)
};

// softmax: dx = y (dy - sum(y dy));  log-softmax: dx = dy - exp(y) sum(dy).
inline SoftmaxBackwardRef softmax_backward(std::int64_t M, std::int64_t N, const std::vector<double>& y,
                                           const std::vector<double>& dy, bool log) {
  SoftmaxBackwardRef r;
  r.dx.resize(static_cast<std::size_t>(M * N));
  r.scale.assign(static_cast<std::size_t>(M), 0.0);
  for (std::int64_t i = 0; i < M; ++i) {
    double s = 0, mag = 0;
    for (std::int64_t j = 0; j < N; ++j) {
      const double t = log ? dy[i * N + j] : y[i * N + j] * dy[i * N + j];
      s += t;
      mag += std::fabs(t);
    }
    double scale = 0;
    for (std::int64_t j = 0; j < N; ++j) {
      const double yy = y[i * N + j], g = dy[i * N + j];
      r.dx[i * N + j] = log ? g - std::exp(yy) * s : yy * (g - s);
      scale = std::fmax(scale, log ? std::fabs(g) + std::exp(yy) * mag : std::fabs(yy) * (std::fabs(g) + mag));
    }
    r.scale[i] = scale;
  }
  return r;
}

// ---- cross-entropy --------------------------------------------------------------------------

struct CrossEntropyRef {
  std::vector<double> loss, lse, dx;  // per row loss (none), lse, gradient (when asked)
  double total = 0;                   // sum of row losses
  std::int64_t count = 0;             // rows whose target is not ignore_index
};

// Row losses and lse; with `grad` the gradient for an incoming scale g per row (g_row[i],
// or the same g_all for every row when g_row is empty).
inline CrossEntropyRef cross_entropy(std::int64_t M, std::int64_t N, const std::vector<double>& x,
                                     const std::vector<std::int64_t>& target, std::int64_t ignore_index,
                                     double eps, bool grad, double g_all = 1.0,
                                     const std::vector<double>& g_row = {}) {
  CrossEntropyRef r;
  r.loss.resize(static_cast<std::size_t>(M));
  r.lse.resize(static_cast<std::size_t>(M));
  if (grad) r.dx.resize(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i) {
    const double* xr = &x[i * N];
    const RowStats s = row_stats(xr, N);
    const double lse = s.lse();
    r.lse[i] = lse;
    const std::int64_t t = target[i];
    const bool ignored = t == ignore_index;
    const bool bad = !ignored && (t < 0 || t >= N);
    double loss = 0;
    if (!ignored) {
      r.count += 1;
      if (bad) {
        loss = kNaN;
      } else {
        double mean = 0;
        for (std::int64_t j = 0; j < N; ++j) mean += xr[j];
        mean /= static_cast<double>(N);
        loss = (1 - eps) * (lse - xr[t]) + (eps != 0 ? eps * (lse - mean) : 0.0);
      }
    }
    r.loss[i] = loss;
    r.total += loss;
    if (grad) {
      const double g = ignored ? 0.0 : bad ? kNaN : (g_row.empty() ? g_all : g_row[i]);
      for (std::int64_t j = 0; j < N; ++j) {
        const double p = std::exp(xr[j] - lse);
        r.dx[i * N + j] = g * (p - eps / static_cast<double>(N) - (j == t ? 1 - eps : 0.0));
      }
    }
  }
  return r;
}

// lse over shards: partial is S x M.
inline std::vector<double> lse_combine(std::int64_t S, std::int64_t M, const std::vector<double>& partial) {
  std::vector<double> out(static_cast<std::size_t>(M));
  for (std::int64_t m = 0; m < M; ++m) {
    double mx = -kInf;
    bool nan = false;
    for (std::int64_t s = 0; s < S; ++s) {
      const double v = partial[s * M + m];
      if (std::isnan(v)) nan = true;
      else mx = std::fmax(mx, v);
    }
    if (nan) out[m] = kNaN;
    else if (std::isinf(mx)) out[m] = mx;
    else {
      double sum = 0;
      for (std::int64_t s = 0; s < S; ++s) sum += std::exp(partial[s * M + m] - mx);
      out[m] = mx + std::log(sum);
    }
  }
  return out;
}

}  // namespace tachyon::ref
