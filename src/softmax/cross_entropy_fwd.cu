// Cross-entropy forward, optionally with the gradient written in the same pass.
//  - resident: the logits row lives in registers across the CTA or the cluster: read once,
//    one row_reduce of (max, sum exp) (+ one of sum(x) with label smoothing), then loss / lse
//    from the team's first thread and dlogits from every thread's registers.
//  - streaming (items == 0): an online pass, then (with a gradient) a second read. Also the
//    layout of long rows without a gradient (choose_stream_config): nothing needs the row
//    after its statistics, so no register tile; a cluster only for rows past seven groups a
//    thread, or too few rows to fill the GPU.
//  - a thread whose chunks all lie inside the row (all but the row's ends) loads and stores
//    them whole: in the row's frame they are 16-byte aligned, so no edge or alignment tests
//    (softmax_fwd.cu). It replaced a build for rows of whole chunks chosen on the host:
//    within 2 % of it or faster, 13 kernels fewer (docs/perf/cross_entropy.md).
//
// logits[target] is loaded by the team's first thread and folded into its maximum (a no-op
// for the value: it is one of the row's logits), so the load has completed before the row's
// reduction — which every thread passes before writing dlogits. dlogits over the logits (in
// place) can therefore never overwrite it first, across warps or across a cluster.
#include "core/grid_dependency.cuh"
#include "core/host_device.h"
#include "core/row_launch.cuh"
#include "softmax/cross_entropy_common.cuh"

namespace tachyon::detail {
namespace {

template <class T, int kItems>
__global__ void __launch_bounds__(kMaxRowThreads) cross_entropy_fwd_resident(const __grid_constant__ CrossEntropyParams p) {
  constexpr int V = kVec<T>;
  allow_dependent_launch();  // the loss sum (sum, mean) waits for this grid itself
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const T* x = row_of<T>(p.logits, valid ? row : 0);
  keep_here(x);
  const int off = frame_offset<T>(x);
  const TargetInfo tg = load_target(p.target, p.target_i64, valid ? row : 0, p.ignore_index, p.n);

  // The whole-chunk path (above); not on the fp32 12-chunk tile, whose registers it raised.
  // Spelled out as in softmax_fwd.cu: one shared helper changed both kernels' SASS and lost.
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
  // logits[target] after the tile's loads: issued before them, its address (the target
  // index) held back every warp's loads for a round trip. After them measured ~1 % faster at
  // 4-16K columns (docs/perf.md, "Softmax and cross-entropy"). Folding it after local_stats
  // instead of as its `extra` lost at 256-1024 columns.
  float xt = -INFINITY;
  if (valid && team.rank() == 0 && tg.col >= 0) xt = to_float(x[tg.col]);
  const float grad = p.count_parts ? counted_mean_scale(p.count_parts, p.grad_scale) : p.grad_scale;
  cluster_reduce_ready(team);
  const RowSoftmax r = RowSoftmax::make(row_reduce(local_stats(h, xt), RowStatsOp<T>{}, team, reduce));
  float sum_dev = 0.f;
  if (p.smoothing != 0.f) {
    ShiftedSum part;
    part.ref = r.m;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if (valid && c0 < p.n) part.add_inside(h[k], c0, p.n);
    }
    sum_dev = row_reduce(part.s, Sum{}, team, reduce);
  }
  if (valid && team.rank() == 0) {
    p.loss[row] = row_loss(r, tg, xt, sum_dev, p.smoothing, p.n);
    if (p.lse_out) p.lse_out[row] = r.lse();
  }
  // The loss alone: no barrier follows the last reduction. A programmatic launch (the mean, after
  // the count kernel) waits before it exits (core/launch.h); otherwise the wait is a no-op.
  if (p.dlogits.data == nullptr) {
    wait_prior_grid();
    return;
  }
  const RowGrad g = RowGrad::make(r, tg, grad, p.smoothing, p.n);
  T* dx = mutable_row_of<T>(p.dlogits, valid ? row : 0);
  keep_here(dx);
  if (inside && frame_offset<T>(dx) == off) {  // dlogits in the logits' frame: whole chunks too
    // 16-bit rows: the statistics' one-FFMA exponential (RowGrad::fast), a branch a chunk.
    const bool fast = sizeof(T) == 2 && fast_exp_row(r.m);
    const RowGrad gf = g.fast();
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      float out[V];
      if (fast) gf.template chunk<true>(h[k], c0, out);
      else g.chunk(h[k], c0, out);
      store_whole<Cache::stream>(dx + c0, from_floats<T>(out));
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (valid && c0 < p.n) {
      float out[V];
      g.chunk(h[k], c0, out);
      store_chunk_f<Cache::stream>(dx, c0, p.n, out);
    }
  }
}

// The streaming kernel's register bound: three 256-thread CTAs an SM (the rest riding with the
// first group took ptxas from 75 to 84 registers unbounded, two CTAs; bounded: no spill). Also
// a 512-thread team's bound (the gradient's streaming layout). nvcc takes __maxnreg__ instead of
// __launch_bounds__, not beside it.
constexpr int kStreamMaxRegs = 80;

template <class T>
__global__ void __maxnreg__(kStreamMaxRegs) cross_entropy_fwd_streaming(const __grid_constant__ CrossEntropyParams p) {
  constexpr int V = kVec<T>;
  allow_dependent_launch();
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const T* x = row_of<T>(p.logits, valid ? row : 0);
  const TargetInfo tg = load_target(p.target, p.target_i64, valid ? row : 0, p.ignore_index, p.n);
  // The statistics read the row as RowEdges: a body of whole chunks from the first 128-byte
  // boundary (a warp's 32 chunks then cover 4 whole lines), plus up to 70 edge elements, one a
  // thread, loaded here and folded in after the body. A misaligned row's partial chunks took
  // the element path, a call that waits for the thread's loads in flight: one more round trip
  // a row. logits[target] is loaded after the body too: loaded first, its address waited for
  // the target index, and so did every warp's first group (the load sits on the path all
  // threads take). Both together measured 2-3 % faster at 32-50K columns (bf16), within noise
  // on longer rows; the edges alone, with the target first, spilled and lost 6 % on every
  // bf16 row.
  const RowEdges ed = RowEdges::make(x, valid ? p.n : 0);
  const T* xb = x + ed.head;
  const int nb = ed.body();
  const int chunks = nb / V;  // whole, 16-byte aligned chunks: no tests, no element path
  const int rank = team.rank(), stride = team.size();
  T edge = from_float<T>(-INFINITY);
  if (rank < ed.edges()) edge = x[ed.edge_col(rank)];

  // The row in groups of kGroup chunks per thread: the group's loads are in flight together,
  // and its (max, sum exp) — the resident kernels' local_stats, one rescale per group rather
  // than per chunk — folds into the running pair. Eight chunks (128 bytes a thread in
  // flight), loaded evict-first: ~0.5-1 % faster than fewer; eight with ordinary loads lost
  // 6 % at 32K columns.
  constexpr int kGroup = 8;
  // The thread's chunks are j = rank + q * stride, q < per: whole groups, then the rest. A rest
  // of up to kRest chunks rides with the first group (its loads in the same round trip)
  // rather than costing the row one more round trip at its end for a nearly empty group
  // (bf16 50257: 24.5 chunks a thread). Only a partial group tests each chunk, and only its
  // row chunks' exponentials are taken (local_stats's `live`). That measured ~3 % faster at
  // bf16 50257, within noise elsewhere. A rest of 2 spilled under the register bound.
  constexpr int kRest = 1;
  const int per = rank < chunks ? (chunks - 1 - rank) / stride + 1 : 0;
  const int nrest = per > kGroup && per % kGroup <= kRest ? per % kGroup : 0;
  const int body = per - nrest;
  // (Captures copies: a structured binding in a lambda capture is C++20, the kernels are 17.)
  const auto col = [rank, stride](int q) { return (rank + q * stride) * V; };
  Float2 st{-INFINITY, 0.f};
  ShiftedSum part;
  const bool smooth = p.smoothing != 0.f;
  for (int q0 = 0; q0 < body; q0 += kGroup) {
    const bool full = q0 + kGroup <= body;
    Vec<T, V> h[kGroup], rest[kRest];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      if (full || q0 + g < body) load_whole<Cache::stream>(xb + col(q0 + g), h[g]);
      else h[g] = fill_vec<T, V>(-INFINITY);
    }
#pragma unroll
    for (int e = 0; e < kRest; ++e) {
      if (q0 == 0 && e < nrest) load_whole<Cache::stream>(xb + col(body + e), rest[e]);
      else rest[e] = fill_vec<T, V>(-INFINITY);
    }
    st = MaxSumExp{}(st, full ? local_stats(h) : local_stats(h, -INFINITY, body - q0));
    if (q0 == 0 && nrest > 0) st = MaxSumExp{}(st, local_stats(rest, -INFINITY, nrest));
    if (smooth) {
      part.rebase(st.a);
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
        if (full || q0 + g < body) part.add_inside(h[g], col(q0 + g), nb);
#pragma unroll
      for (int e = 0; e < kRest; ++e)
        if (q0 == 0 && e < nrest) part.add_inside(rest[e], col(body + e), nb);
    }
  }
  // logits[target] joins the max only (it is one of the row's values: see the file's head).
  float xt = -INFINITY;
  if (valid && rank == 0 && tg.col >= 0) xt = to_float(x[tg.col]);
  st = MaxSumExp{}(st, Float2{xt, 0.f});
  // The edges: this thread's element, then (teams smaller than the edges only: no layout of
  // today's) the others.
  for (int i = rank; i < ed.edges(); i += stride) {
    const float v = to_float(i == rank ? edge : x[ed.edge_col(i)]);
    st = MaxSumExp{}(st, Float2{v, v == -INFINITY ? 0.f : exp_shifted(v, v)});  // local_stats of one value
    if (smooth) {
      part.rebase(fmaxf(part.ref, v));
      part.add(v);
    }
  }
  cluster_reduce_ready(team);
  const RowSoftmax r = RowSoftmax::make(row_reduce(st, RowStatsOp<T>{}, team, reduce));
  const float sum_dev = smooth ? row_reduce(part.relative_to(r.m), Sum{}, team, reduce) : 0.f;
  if (valid && team.rank() == 0) {
    p.loss[row] = row_loss(r, tg, xt, sum_dev, p.smoothing, p.n);
    if (p.lse_out) p.lse_out[row] = r.lse();
  }
  if (p.dlogits.data == nullptr) {  // as the resident kernel
    wait_prior_grid();
    return;
  }
  const float grad = p.count_parts ? counted_mean_scale(p.count_parts, p.grad_scale) : p.grad_scale;
  const RowGrad g = RowGrad::make(r, tg, grad, p.smoothing, p.n);
  T* dx = mutable_row_of<T>(p.dlogits, valid ? row : 0);
  const int goff = frame_offset<T, 128>(x);  // the gradient pass: the whole row, in its frame
  const int gchunks = valid ? ceil_div(p.n + goff, V) : 0;
  for (int j = rank; j < gchunks; j += stride) {
    Vec<T, V> h;
    load_chunk(x, j * V - goff, p.n, h, from_float<T>(-INFINITY));
    float out[V];
    g.chunk(h, j * V - goff, out);
    store_chunk_f<Cache::stream>(dx, j * V - goff, p.n, out);
  }
}

// Register tiles as the softmax forward's (the row in registers, one tensor).
constexpr int max_items(int elem_bytes) { return elem_bytes == 4 ? 12 : 8; }

template <class T, int I>
auto resident_kernel(const char* op) {
  return resident_or_throw<I, max_items(sizeof(T))>(op, "cross-entropy", [](auto items) {
    constexpr int kItems = decltype(items)::value;
    return cross_entropy_fwd_resident<T, kItems>;
  });
}

}  // namespace

int cross_entropy_max_items(int elem_bytes) { return max_items(elem_bytes); }

int cross_entropy_forward_regs(const char* op, DType storage) {
  return dispatch_float(op, storage, [&](auto tag) {
    return kernel_regs(op, reinterpret_cast<const void*>(resident_kernel<typename decltype(tag)::type, 8>(op)));
  });
}

void launch_cross_entropy_forward(const char* op, DType storage, const CrossEntropyParams& p,
                                  const RowConfig& cfg, cudaStream_t stream) {
  const long long groups = ceil_div(p.rows, cfg.rows_per_cta);
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      if constexpr (I == 0) launch_rows(op, cross_entropy_fwd_streaming<T>, cfg, groups, 0, stream, p);
      else launch_rows(op, resident_kernel<T, I>(op), cfg, groups, 0, stream, p);
    });
  });
}

}  // namespace tachyon::detail
