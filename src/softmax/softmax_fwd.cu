// Softmax / log-softmax forward.
//  - resident: the row lives in registers (items chunks per thread) across the CTA or the
//    cluster; x is read once, one row_reduce of the online (max, sum exp) pair, y written once.
//  - streaming (items == 0, or an output dtype other than the input's): an online pass over
//    the row, then an output pass that reads it again. Works with any team layout.
#include "core/host_device.h"
#include "core/row_launch.cuh"
#include "softmax/softmax_common.cuh"
#include "softmax/softmax_params.h"

namespace tachyon::detail {
namespace {

// kExact: the fp32-accurate exponential also for 16-bit inputs (streaming kernel: it serves
// the mixed-dtype calls, e.g. fp32 probabilities from bf16 logits).
template <bool kExact, class T, int V>
__device__ __forceinline__ void softmax_chunk(const RowSoftmax& r, bool log, const Vec<T, V>& h, float (&y)[V]) {
  if (log) {
#pragma unroll
    for (int e = 0; e < V; ++e) y[e] = r.log_prob(elem(h, e));
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) y[e] = r.template prob<T, kExact || sizeof(T) == 4>(elem(h, e));
  }
}

template <class T, int kItems>
__global__ void __launch_bounds__(kMaxRowThreads) softmax_fwd_resident(const __grid_constant__ SoftmaxFwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const T* x = row_of<T>(p.x, valid ? row : 0);
  const int off = frame_offset<T>(x);
  // A thread whose chunks all lie inside the row (all but the row's ends) reads and writes
  // them whole: in the row's frame they are 16-byte aligned, so no edge, alignment or log
  // tests a chunk (24 -> 16 instructions an element, H200 bf16 131072: docs/perf/softmax.md).
  // Not on the fp32 12-chunk tile, where the second path took 80 -> 120 registers. (The same
  // loads in cross_entropy_fwd.cu: one shared helper changed both kernels' SASS and lost.)
  const bool inside =
      kItems <= 8 && valid && chunk_col(0, team, V, off) >= 0 && chunk_col(kItems - 1, team, V, off) + V <= p.n;

  Vec<T, V> h[kItems];
  if (inside) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) load_whole<Cache::stream>(x + chunk_col(k, team, V, off), h[k]);
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if (valid && c0 < p.n) load_chunk<Cache::stream>(x, c0, p.n, h[k], from_float<T>(-INFINITY));
      else h[k] = fill_vec<T, V>(-INFINITY);
    }
  }
  cluster_reduce_ready(team);
  const RowSoftmax r = RowSoftmax::make(row_reduce(local_stats(h), RowStatsOp<T>{}, team, reduce));

  T* y = mutable_row_of<T>(p.y, valid ? row : 0);
  if (inside && frame_offset<T>(y) == off) {  // y in x's frame: its chunks too are whole
    auto out_pass = [&, team = team](auto log) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        float out[V];
        softmax_chunk<false>(r, decltype(log)::value, h[k], out);
        store_whole<Cache::stream>(y + chunk_col(k, team, V, off), from_floats<T>(out));
      }
    };
    if (p.log) out_pass(std::true_type{});
    else out_pass(std::false_type{});
    return;
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (valid && c0 < p.n) {
      float out[V];
      softmax_chunk<false>(r, p.log, h[k], out);
      store_chunk_f<Cache::stream>(y, c0, p.n, out);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kMaxRowThreads) softmax_fwd_streaming(const __grid_constant__ SoftmaxFwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const T* x = row_of<T>(p.x, valid ? row : 0);
  const int off = frame_offset<T>(x);
  const int chunks = valid ? ceil_div(p.n + off, V) : 0;

  OnlineStats st;
#pragma unroll 4
  for (int j = team.rank(); j < chunks; j += team.size()) {
    Vec<T, V> h;
    load_chunk(x, j * V - off, p.n, h, from_float<T>(-INFINITY));
    st.add(h);
  }
  cluster_reduce_ready(team);
  const RowSoftmax r = RowSoftmax::make(row_reduce(st.pair(), MaxSumExp{}, team, reduce));

  void* y = mutable_row_of(p.y, valid ? row : 0);
  for (int j = team.rank(); j < chunks; j += team.size()) {
    Vec<T, V> h;
    load_chunk(x, j * V - off, p.n, h, from_float<T>(-INFINITY));
    float out[V];
    softmax_chunk<true>(r, p.log, h, out);
    store_chunk_f<Cache::stream, V>(y, p.y.dtype, j * V - off, p.n, out);
  }
}

// Register tiles built per dtype size: the largest that -Xptxas -v shows without spills
// under the 128-register bound of 512-thread CTAs, and no larger than the rows of the
// issue need (16-bit: 16 CTAs x 512 threads x 8 chunks = 524,288 elements).
constexpr int max_items(int elem_bytes) { return elem_bytes == 4 ? 12 : 8; }

template <class T, int I>
auto resident_kernel(const char* op) {
  return resident_or_throw<I, max_items(sizeof(T))>(
      op, "forward", [](auto items) { return softmax_fwd_resident<T, decltype(items)::value>; });
}

}  // namespace

int softmax_forward_max_items(int elem_bytes) { return max_items(elem_bytes); }

int softmax_forward_regs(const char* op, DType storage) {
  return dispatch_float(op, storage, [&](auto tag) {
    return kernel_regs(op, reinterpret_cast<const void*>(resident_kernel<typename decltype(tag)::type, 8>(op)));
  });
}

void launch_softmax_forward(const char* op, bool typed, DType storage, const SoftmaxFwdParams& p, const RowConfig& cfg,
                            cudaStream_t stream) {
  const long long groups = ceil_div(p.rows, cfg.rows_per_cta);
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!typed || cfg.items == 0) {
      launch_rows(op, softmax_fwd_streaming<T>, cfg, groups, 0, stream, p);
      return;
    }
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      if constexpr (I > 0) launch_rows(op, resident_kernel<T, I>(op), cfg, groups, 0, stream, p);
    });
  });
}

}  // namespace tachyon::detail
