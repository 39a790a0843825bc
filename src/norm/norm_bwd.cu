// RMSNorm / LayerNorm backward.
//
// dx: per row, from x, dy, the saved statistics and one row reduction (two sums at once for
// LayerNorm). dw, db: sums over rows. Each CTA (or cluster) walks a fixed set of rows —
// a persistent grid — and keeps its threads on the same columns (frame offset 0), so the
// column sums accumulate in registers; they leave as one fp32 partial row per row group,
// and column_sum adds the partials in a fixed order: deterministic, no float atomics.
#include "core/dtype.cuh"
#include "core/reduce.cuh"
#include "core/row_access.cuh"
#include "core/row_launch.cuh"
#include "core/vec.cuh"
#include "norm/norm_params.h"

namespace tachyon::detail {
namespace {

// The weight factor (w + weight_offset) of a chunk, or 1 without a weight.
template <bool kTyped, class T, int V>
__device__ __forceinline__ void load_scale(const NormBwdParams& p, int c0, float (&w)[V]) {
  if (p.weight.data) {
    OperandIO<T, kTyped>::template load<Cache::normal, V>(p.weight.data, p.weight.dtype, c0, p.n, w, 0.f);
#pragma unroll
    for (int e = 0; e < V; ++e) w[e] += p.weight_offset;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) w[e] = 1.f;
  }
}

// Adds a chunk's share of (sum(wdy), sum(xhat * wdy)). Columns outside the row have dy = 0,
// so wdy = 0 and they add nothing.
template <class T, int V>
__device__ __forceinline__ void accumulate_sums(const float (&w)[V], const Vec<T, V>& x, const Vec<T, V>& dy,
                                                float mean, float rstd, Float2& part) {
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float xhat = (elem(x, e) - mean) * rstd;
    const float wdy = elem(dy, e) * w[e];
    part.a += wdy;
    part.b += xhat * wdy;
  }
}

// dx = rstd * (wdy - mean(wdy) - xhat * mean(xhat * wdy)) (+ dresidual) for one chunk, and
// the chunk's dw, db terms added to dw_acc, db_acc. (RMSNorm: mean = 0 and mean(wdy) = 0.)
template <bool kTyped, class T, int V>
__device__ __forceinline__ void chunk_gradients(const NormBwdParams& p, long long row, int c0,
                                                const float (&w)[V], const Vec<T, V>& x, const Vec<T, V>& dy,
                                                float mean, float rstd, float mean_wdy, float mean_xhat_wdy,
                                                float (&dw_acc)[V], float (&db_acc)[V]) {
  using IO = OperandIO<T, kTyped>;
  float dres[V], dx[V];
  const bool has_dres = !kTyped && p.dresidual.data;
  if (has_dres) load_chunk_f<Cache::stream, V>(row_of(p.dresidual, row), p.dresidual.dtype, c0, p.n, dres, 0.f);
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float g = elem_again(dy, e);
    const float xhat = (elem_again(x, e) - mean) * rstd;
    dx[e] = rstd * (g * w[e] - mean_wdy - xhat * mean_xhat_wdy) + (has_dres ? dres[e] : 0.f);
    dw_acc[e] += g * xhat;
    db_acc[e] += g;
  }
  IO::template store<Cache::stream, V>(IO::mutable_row(p.dx, row), p.dx.dtype, c0, p.n, dx);
}

// Row statistics of the reduction: (mean(wdy), mean(xhat * wdy)); RMSNorm needs only the second.
template <bool kLayerNorm>
__device__ __forceinline__ Float2 reduce_sums(Float2 part, const RowTeam& team, ReduceState& reduce, int n) {
  if constexpr (kLayerNorm) {
    const Float2 tot = row_reduce(part, Sum2{}, team, reduce);
    return {tot.a / n, tot.b / n};
  } else {
    return {0.f, row_reduce(part.b, Sum{}, team, reduce) / n};
  }
}


// Dynamic shared memory of the resident backward: each thread's weight factors, fp32
// (items x vec per thread: loaded once, read every row, keeping registers for x, dy and
// the column sums), then, with several rows per CTA, the CTA's column sums (n, or 2n).
template <int kItems, int V>
__host__ __device__ constexpr std::size_t weight_smem_floats(int cta_threads) {
  return static_cast<std::size_t>(cta_threads) * kItems * V;
}

template <class T, int kItems, bool kLayerNorm, bool kTyped>
__global__ void __launch_bounds__(kMaxRowThreads) norm_bwd_resident(const __grid_constant__ NormBwdParams p) {
  constexpr int V = kVec<T>;
  extern __shared__ float dyn_smem[];
  float* scale_smem = dyn_smem;
  float* column_smem = dyn_smem + weight_smem_floats<kItems, V>(blockDim.x);
  __shared__ ReduceScratch scratch;
  ReduceState reduce{&scratch};
  const RowTeam team = RowTeam::make(p.threads_per_row, p.rows_per_cta, p.cluster_size);
  cluster_reduce_prologue(team, reduce);
  cluster_reduce_ready(team);
  // Thread-private slots: chunk k of thread t at [(k * blockDim + t) * V], conflict-free LDS.128.
  auto scale_at = [&](int k) { return scale_smem + (static_cast<std::size_t>(k) * blockDim.x + threadIdx.x) * V; };
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    float w[V];
    load_scale<kTyped, T>(p, chunk_col(k, team, V, 0), w);
#pragma unroll
    for (int e = 0; e < V; ++e) scale_at(k)[e] = w[e];
  }
  float dw_acc[kItems][V], db_acc[kItems][V];
#pragma unroll
  for (int k = 0; k < kItems; ++k)
#pragma unroll
    for (int e = 0; e < V; ++e) dw_acc[k][e] = db_acc[k][e] = 0.f;

  const RowLoop loop(team, p.rows);
  for (long long it = 0; it < loop.iters; ++it) {
    const long long row = RowLoop::row(team, it);
    const bool valid = row < p.rows;
    Vec<T, V> xv[kItems], dyv[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, 0);
      if (valid && c0 < p.n) {
        load_chunk<Cache::stream>(row_of<T>(p.x, row), c0, p.n, xv[k], from_float<T>(0.f));
        load_chunk<Cache::stream>(row_of<T>(p.dy, row), c0, p.n, dyv[k], from_float<T>(0.f));
      } else {
        xv[k] = dyv[k] = zero_vec<T, V>();
      }
    }
    const float mean = (kLayerNorm && valid) ? p.mean[row] : 0.f;
    const float rstd = valid ? p.rstd[row] : 0.f;
    Float2 part{0.f, 0.f};
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      float w[V];
#pragma unroll
      for (int e = 0; e < V; ++e) w[e] = scale_at(k)[e];
      accumulate_sums(w, xv[k], dyv[k], mean, rstd, part);
    }
    const Float2 m = reduce_sums<kLayerNorm>(part, team, reduce, p.n);
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, 0);
      if (!valid || c0 >= p.n) continue;
      float w[V];
#pragma unroll
      for (int e = 0; e < V; ++e) w[e] = scale_at(k)[e];
      chunk_gradients<kTyped>(p, row, c0, w, xv[k], dyv[k], mean, rstd, m.a, m.b, dw_acc[k], db_acc[k]);
    }
  }

  // One partial row per row group. Several rows per CTA: fold the teams in order first.
  const long long group = team.group();
  auto emit = [&](float* partial, float (&acc)[kItems][V], float* smem) {
    if (team.rows_per_cta == 1) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int c0 = chunk_col(k, team, V, 0);
        if (c0 < p.n) store_chunk_f(partial + group * p.n, c0, p.n, acc[k]);
      }
      return;
    }
    for (int t = 0; t < team.rows_per_cta; ++t) {
      if (team.row_in_cta == t) {
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
          const int c0 = chunk_col(k, team, V, 0);
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (c0 + e < p.n) smem[c0 + e] = (t == 0 ? 0.f : smem[c0 + e]) + acc[k][e];
        }
      }
      __syncthreads();
    }
    for (int c = threadIdx.x; c < p.n; c += blockDim.x) partial[group * p.n + c] = smem[c];
    __syncthreads();
  };
  if (p.dw_partial) emit(p.dw_partial, dw_acc, column_smem);
  if constexpr (kLayerNorm)
    if (p.db_partial) emit(p.db_partial, db_acc, column_smem + p.n);
}

// Rows too long to keep x and dy on chip: two passes over each row, and the column sums
// read-modify-written in the group's own partial row (each column owned by one thread, so
// still without atomics and deterministic).
template <class T, bool kLayerNorm>
__global__ void __launch_bounds__(kMaxRowThreads) norm_bwd_streaming(const __grid_constant__ NormBwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  ReduceState reduce{&scratch};
  const RowTeam team = RowTeam::make(p.threads_per_row, p.rows_per_cta, p.cluster_size);
  cluster_reduce_prologue(team, reduce);
  cluster_reduce_ready(team);
  const int chunks = (p.n + V - 1) / V;
  float* dw_row = p.dw_partial ? p.dw_partial + team.group() * p.n : nullptr;
  float* db_row = p.db_partial ? p.db_partial + team.group() * p.n : nullptr;
  const RowLoop loop(team, p.rows);
  for (long long it = 0; it < loop.iters; ++it) {
    const long long row = RowLoop::row(team, it);
    const bool valid = row < p.rows;
    const float mean = (kLayerNorm && valid) ? p.mean[row] : 0.f;
    const float rstd = valid ? p.rstd[row] : 0.f;
    auto load = [&](int c0, Vec<T, V>& x, Vec<T, V>& dy) {
      load_chunk(row_of<T>(p.x, row), c0, p.n, x, from_float<T>(0.f));
      load_chunk(row_of<T>(p.dy, row), c0, p.n, dy, from_float<T>(0.f));
    };
    Float2 part{0.f, 0.f};
    for (int j = team.rank(); valid && j < chunks; j += team.size()) {
      Vec<T, V> x, dy;
      float w[V];
      load(j * V, x, dy);
      load_scale<false, T>(p, j * V, w);
      accumulate_sums(w, x, dy, mean, rstd, part);
    }
    const Float2 m = reduce_sums<kLayerNorm>(part, team, reduce, p.n);
    for (int j = team.rank(); valid && j < chunks; j += team.size()) {
      Vec<T, V> x, dy;
      float w[V];
      load(j * V, x, dy);
      load_scale<false, T>(p, j * V, w);
      float dw[V], db[V];
#pragma unroll
      for (int e = 0; e < V; ++e) dw[e] = db[e] = 0.f;
      if (it > 0 && dw_row) load_chunk_f(dw_row, j * V, p.n, dw, 0.f);
      if (it > 0 && db_row) load_chunk_f(db_row, j * V, p.n, db, 0.f);
      chunk_gradients<false>(p, row, j * V, w, x, dy, mean, rstd, m.a, m.b, dw, db);
      if (dw_row) store_chunk_f(dw_row, j * V, p.n, dw);
      if (db_row) store_chunk_f(db_row, j * V, p.n, db);
    }
  }
}

// out[c] = sum over g of partial[g][c], g in increasing order within each of the 16 slices
// and the slices added in order: the same bits every run.
__global__ void __launch_bounds__(512) column_sum_kernel(const float* partial, long long groups, int n, void* out,
                                                         DType out_dtype) {
  constexpr int kSlices = 16;
  __shared__ float slice_sum[kSlices][32];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float s = 0.f;
  if (c < n)
    for (long long g = threadIdx.y; g < groups; g += kSlices) s += partial[g * n + c];
  slice_sum[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < kSlices; ++i) total += slice_sum[i][threadIdx.x];
    if (out_dtype == DType::f32) static_cast<float*>(out)[c] = total;
    else if (out_dtype == DType::f16) static_cast<half*>(out)[c] = from_float<half>(total);
    else static_cast<bf16*>(out)[c] = from_float<bf16>(total);
  }
}

// The kernel for a register tile: resident for 1..8 items (the backward keeps x, dy and
// the column sums, so its tiles are smaller than the forward's), streaming for 0.
template <class T, int kItems, bool kTyped>
auto resident_kernel(bool layer_norm) -> void (*)(NormBwdParams) {
  if constexpr (sizeof(T) == 2 && kItems > 2) return norm_bwd_resident<T, kItems, false, kTyped>;  // RMSNorm only
  else return layer_norm ? norm_bwd_resident<T, kItems, true, kTyped> : norm_bwd_resident<T, kItems, false, kTyped>;
}

template <class T, int kItems>
auto backward_kernel(const char* op, bool layer_norm, bool typed) -> void (*)(NormBwdParams) {
  if constexpr (kItems == 0) {
    return layer_norm ? norm_bwd_streaming<T, true> : norm_bwd_streaming<T, false>;
  } else if constexpr (kItems <= 4) {
    if (kItems > norm_backward_max_items(sizeof(T), layer_norm))
      throw Error(std::string(op) + ": internal: backward tile of " + std::to_string(kItems) + " items");
    return typed ? resident_kernel<T, kItems, true>(layer_norm) : resident_kernel<T, kItems, false>(layer_norm);
  } else {
    throw Error(std::string(op) + ": internal: backward has no " + std::to_string(kItems) + "-item kernel");
  }
}

template <class T, int kItems>
std::size_t backward_smem(const NormBwdParams& p, const RowConfig& cfg, bool layer_norm) {
  if constexpr (kItems == 0) {
    return 0;
  } else {
    std::size_t floats = weight_smem_floats<kItems, kVec<T>>(cfg.cta_threads);
    if (cfg.rows_per_cta > 1 && (p.dw_partial || p.db_partial)) floats += static_cast<std::size_t>(p.n) * (layer_norm ? 2 : 1);
    return floats * sizeof(float);
  }
}

}  // namespace

int norm_backward_max_items(int elem_bytes, bool layer_norm) {
  // Registers per chunk: x and dy raw (8) + fp32 column sums (vec for dw, vec for db):
  // 16-bit 16 / 24, fp32 12 / 16. Largest tiles that -Xptxas -v shows without spills
  // under the 128-register bound of 512-thread CTAs.
  if (elem_bytes == 4) return 4;
  return layer_norm ? 2 : 4;
}

void launch_norm_backward(const char* op, bool layer_norm, bool typed, DType storage, const NormBwdParams& p,
                          const RowConfig& cfg, long long groups, void* dw, DType dw_dtype, void* db,
                          DType db_dtype, cudaStream_t stream) {
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      launch_rows(op, backward_kernel<T, I>(op, layer_norm, typed), cfg, groups, backward_smem<T, I>(p, cfg, layer_norm),
                  stream, p);
    });
  });
  const dim3 block(32, 16);
  const unsigned grid = static_cast<unsigned>((p.n + 31) / 32);
  if (dw) {
    column_sum_kernel<<<grid, block, 0, stream>>>(p.dw_partial, groups, p.n, dw, dw_dtype);
    TACHYON_CHECK_LAUNCH(op);
  }
  if (db) {
    column_sum_kernel<<<grid, block, 0, stream>>>(p.db_partial, groups, p.n, db, db_dtype);
    TACHYON_CHECK_LAUNCH(op);
  }
}

long long norm_backward_groups(const char* op, bool layer_norm, bool typed, DType storage, const RowConfig& cfg,
                               const NormBwdParams& p, long long total, int sm_count) {
  long long groups = 0;
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      auto kernel = backward_kernel<T, I>(op, layer_norm, typed);
      groups = persistent_groups(op, reinterpret_cast<const void*>(kernel), cfg, backward_smem<T, I>(p, cfg, layer_norm),
                                 total, sm_count);
    });
  });
  return groups;
}

}  // namespace tachyon::detail
