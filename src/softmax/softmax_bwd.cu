// Softmax / log-softmax backward: one row sum, then an elementwise pass.
//   softmax:      dx = y * (dy - sum(y * dy))
//   log-softmax:  dx = dy - exp(y) * sum(dy)
//  - resident: y and dy live in registers across the CTA or the cluster (read once).
//  - streaming (items == 0, or dx of another dtype): the sum pass, then a pass that reads
//    y and dy again. Works with any team layout.
#include "core/host_device.h"
#include "core/row_launch.cuh"
#include "softmax/softmax_common.cuh"
#include "softmax/softmax_params.h"

namespace tachyon::detail {
namespace {

// The chunk's share of the row sum. Columns outside the row were loaded as 0.
template <class T, int V>
__device__ __forceinline__ float chunk_dot(bool log, const Vec<T, V>& y, const Vec<T, V>& dy) {
  float r[V];
#pragma unroll
  for (int e = 0; e < V; ++e) r[e] = log ? elem(dy, e) : elem(y, e) * elem(dy, e);
#pragma unroll
  for (int w = 1; w < V; w *= 2)
#pragma unroll
    for (int e = 0; e + w < V; e += 2 * w) r[e] += r[e + w];
  return r[0];
}

template <class T, int V>
__device__ __forceinline__ void chunk_grad(bool log, float sum, const Vec<T, V>& y, const Vec<T, V>& dy,
                                           float (&dx)[V]) {
  if (log) {
#pragma unroll
    for (int e = 0; e < V; ++e) dx[e] = elem(dy, e) - fast_exp2(elem(y, e) * kLog2e) * sum;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) dx[e] = elem(y, e) * (elem(dy, e) - sum);
  }
}

template <class T, int kItems>
__global__ void __launch_bounds__(kMaxRowThreads) softmax_bwd_resident(const __grid_constant__ SoftmaxBwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const T* y = row_of<T>(p.y, valid ? row : 0);
  const T* dy = row_of<T>(p.dy, valid ? row : 0);
  const int off = frame_offset<T>(y);

  Vec<T, V> yv[kItems], gv[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (valid && c0 < p.n) {
      load_chunk<Cache::stream>(y, c0, p.n, yv[k], from_float<T>(0.f));
      load_chunk<Cache::stream>(dy, c0, p.n, gv[k], from_float<T>(0.f));
    } else {
      yv[k] = gv[k] = zero_vec<T, V>();
    }
  }
  cluster_reduce_ready(team);
  float part = 0.f;
#pragma unroll
  for (int k = 0; k < kItems; ++k) part += chunk_dot(p.log, yv[k], gv[k]);
  const float sum = row_reduce(part, Sum{}, team, reduce);

  T* dx = mutable_row_of<T>(p.dx, valid ? row : 0);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (valid && c0 < p.n) {
      float out[V];
      chunk_grad(p.log, sum, yv[k], gv[k], out);
      store_chunk_f<Cache::stream>(dx, c0, p.n, out);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kMaxRowThreads) softmax_bwd_streaming(const __grid_constant__ SoftmaxBwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const T* y = row_of<T>(p.y, valid ? row : 0);
  const T* dy = row_of<T>(p.dy, valid ? row : 0);
  const int off = frame_offset<T>(y);
  const int chunks = valid ? ceil_div(p.n + off, V) : 0;
  auto load = [&](int j, Vec<T, V>& yv, Vec<T, V>& gv) {
    load_chunk(y, j * V - off, p.n, yv, from_float<T>(0.f));
    load_chunk(dy, j * V - off, p.n, gv, from_float<T>(0.f));
  };

  float part = 0.f;
#pragma unroll 4
  for (int j = team.rank(); j < chunks; j += team.size()) {
    Vec<T, V> yv, gv;
    load(j, yv, gv);
    part += chunk_dot(p.log, yv, gv);
  }
  cluster_reduce_ready(team);
  const float sum = row_reduce(part, Sum{}, team, reduce);

  void* dx = mutable_row_of(p.dx, valid ? row : 0);
  for (int j = team.rank(); j < chunks; j += team.size()) {
    Vec<T, V> yv, gv;
    load(j, yv, gv);
    float out[V];
    chunk_grad(p.log, sum, yv, gv, out);
    store_chunk_f<Cache::stream, V>(dx, p.dx.dtype, j * V - off, p.n, out);
  }
}

// Register tiles built per dtype size: the largest that -Xptxas -v shows without spills
// under the 128-register bound of 512-thread CTAs (two tensors in registers: f32 12 items
// uses all 128), as the forward's.
constexpr int max_items(int elem_bytes) { return elem_bytes == 4 ? 12 : 8; }

template <class T, int I>
auto resident_kernel(const char* op) {
  return resident_or_throw<I, max_items(sizeof(T))>(
      op, "backward", [](auto items) { return softmax_bwd_resident<T, decltype(items)::value>; });
}

}  // namespace

int softmax_backward_max_items(int elem_bytes) { return max_items(elem_bytes); }

void launch_softmax_backward(const char* op, bool typed, DType storage, const SoftmaxBwdParams& p,
                             const RowConfig& cfg, cudaStream_t stream) {
  const long long groups = ceil_div(p.rows, cfg.rows_per_cta);
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!typed || cfg.items == 0) {
      launch_rows(op, softmax_bwd_streaming<T>, cfg, groups, 0, stream, p);
      return;
    }
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      if constexpr (I > 0) launch_rows(op, resident_kernel<T, I>(op), cfg, groups, 0, stream, p);
    });
  });
}

}  // namespace tachyon::detail
