// RMSNorm / LayerNorm forward: one kernel body for both (kLayerNorm). A resident kernel holds
// the row in registers (items 16-byte chunks a thread) across a CTA or a cluster of up to 16:
// x read once, y written once, one exchange for the statistics, weight and bias staged under
// the row's loads. Longer rows stream (items == 0: x re-read a pass). Builds (NormFwdMode,
// chosen in norm.cpp): whole / whole_cluster (one dtype, whole aligned chunks: no edge,
// alignment or presence tests), framed (whole's loops on rows off the 16-byte grid, in their
// frame), typed (one dtype, anything else), generic (mixed dtypes), the fused residual's grouped
// builds; some have a full-tile form (kFull). (docs/perf/norm.md#forward-design)
#include <type_traits>

#include "core/host_device.h"
#include "core/dtype.cuh"
#include "core/reduce.cuh"
#include "core/row_access.cuh"
#include "core/row_launch.cuh"
#include "core/vec.cuh"
#include "core/vector_stage.cuh"
#include "norm/norm_params.h"

namespace tachyon::detail {
namespace {

// A chunk of a storage-dtype row: whole and aligned (kWhole: the full-tile form, no tests), or
// any chunk (load_chunk / store_chunk: the edge and alignment tests, the masked path).
template <bool kWhole, class T, int V>
__device__ __forceinline__ void load_part(const T* row, int c0, int n, Vec<T, V>& out) {
  if constexpr (kWhole) load_whole<Cache::stream>(row + c0, out);
  else load_chunk<Cache::stream>(row, c0, n, out, from_float<T>(0.f));
}
template <bool kWhole, class T, int V>
__device__ __forceinline__ void store_part(T* row, int c0, int n, const Vec<T, V>& v) {
  if constexpr (kWhole) store_whole<Cache::stream>(row + c0, v);
  else store_chunk<Cache::stream>(row, c0, n, v);
}

// h = x, or x + residual (then also stored to residual_out, rounded to the storage dtype T,
// which is exactly the value normalised — as if the add had been a separate kernel).
// kAnyDtype: the generic resident build's fp32 rows, whose x and residual_out may be 16-bit
// (forward_storage); elsewhere they have the storage dtype T.
template <Cache kCache, bool kTyped, bool kAnyDtype = false, class T, int V>
__device__ __forceinline__ void load_input(const NormFwdParams& p, long long row, int c0, Vec<T, V>& h) {
  static_assert(!kAnyDtype || (!kTyped && sizeof(T) == 4), "the generic build's fp32 rows");
  using IO = OperandIO<T, kTyped>;
  if (p.residual.data == nullptr) {
    if constexpr (kAnyDtype) IO::template load<kCache, V>(IO::row(p.x, row), p.x.dtype, c0, p.n, h.v, 0.f);
    else load_chunk<kCache>(row_of<T>(p.x, row), c0, p.n, h, from_float<T>(0.f));
  } else {
    float a[V], b[V];
    IO::template load<kCache, V>(IO::row(p.x, row), p.x.dtype, c0, p.n, a, 0.f);
    IO::template load<kCache, V>(IO::row(p.residual, row), p.residual.dtype, c0, p.n, b, 0.f);
#pragma unroll
    for (int e = 0; e < V; ++e) a[e] += b[e];
    if constexpr (kAnyDtype) {
      // The value normalised is residual_out's, rounded to its dtype.
      if (p.residual_out.dtype != DType::f32) {
        const bool is_bf16 = p.residual_out.dtype == DType::bf16;
#pragma unroll
        for (int e = 0; e < V; ++e) a[e] = bits16_to_float(float_to_bits16(a[e], is_bf16), is_bf16);
      }
      h = from_floats<T>(a);
      IO::template store<Cache::stream, V>(IO::mutable_row(p.residual_out, row), p.residual_out.dtype, c0, p.n, a);
    } else {
      h = from_floats<T>(a);
      // Streamed like y (written once, read by a later kernel). The evict-first store is one 16-byte
      // STG a chunk, where ptxas splits a plain assignment into four 32-bit ones
      // (docs/perf/norm.md#fused-residual-design).
      store_chunk<Cache::stream>(mutable_row_of<T>(p.residual_out, row), c0, p.n, h);
    }
  }
}

// The fused residual's tile in its grouped build (NormFwdMode::fused_grouped): x for every
// chunk first, then the residual kGroup chunks at a time, each group added and stored to
// residual_out. residual_out is exactly x or residual, or disjoint from both (validated on the
// host), and a thread stores only chunks it has loaded, so later loads may pass earlier stores;
// load_input, kept in program order, has one chunk pair in flight. Same bits as load_input. Runs
// in the bounded kernel (64 registers); the add and store are spelled out, not shared with
// load_input through a helper, which raised ptxas's spill. (docs/perf/norm.md#fused-residual-design)
// kFull: the full-tile form (norm_fwd_row): every chunk inside the row, whole and aligned.
template <int kGroup, bool kFull, class T, int V, int kItems>
__device__ __forceinline__ void load_fused_grouped(const NormFwdParams& p, const RowTeam& team, long long row,
                                                   bool valid, int off, Vec<T, V> (&h)[kItems]) {
  const T* x = row_of<T>(p.x, valid ? row : 0);
  const T* res = row_of<T>(p.residual, valid ? row : 0);
  T* res_out = mutable_row_of<T>(p.residual_out, valid ? row : 0);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (valid && (kFull || c0 < p.n)) load_part<kFull>(x, c0, p.n, h[k]);
    else h[k] = zero_vec<T, V>();
  }
#pragma unroll
  for (int g = 0; g < kItems; g += kGroup) {
    Vec<T, V> r[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup && g + j < kItems; ++j) {
      const int c0 = chunk_col(g + j, team, V, off);
      if (valid && (kFull || c0 < p.n)) load_part<kFull>(res, c0, p.n, r[j]);
    }
#pragma unroll
    for (int j = 0; j < kGroup && g + j < kItems; ++j) {
      const int c0 = chunk_col(g + j, team, V, off);
      if (!(valid && (kFull || c0 < p.n))) continue;
      float a[V], b[V];
      to_floats(h[g + j], a);
      to_floats(r[j], b);
#pragma unroll
      for (int e = 0; e < V; ++e) a[e] += b[e];
      h[g + j] = from_floats<T>(a);
      store_part<kFull>(res_out, c0, p.n, h[g + j]);
    }
  }
}

// The fused residual of an fp32 residual stream beside 16-bit x (the generic build's fp32 tile:
// autocast's pre-norm block). Every chunk's residual (into the tile) and x (kept packed, two
// registers a chunk) is loaded before any residual_out store (residual_out's aliasing as in
// load_fused_grouped), where load_input's program order keeps one chunk pair in flight. Same bits
// as load_input: x + residual in fp32. (docs/perf/norm.md#fused-residual-design)
template <int kItems>
__device__ __forceinline__ void load_fused_f32(const NormFwdParams& p, const RowTeam& team, long long row, bool valid,
                                               int off, Vec<float, 4> (&h)[kItems]) {
  constexpr int V = 4;
  const bool is_bf16 = p.x.dtype == DType::bf16;
  const unsigned short* x = row_of<unsigned short>(p.x, valid ? row : 0);
  const float* res = row_of<float>(p.residual, valid ? row : 0);
  float* res_out = mutable_row_of<float>(p.residual_out, valid ? row : 0);
  Vec<unsigned short, V> xs[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (valid && c0 < p.n) {
      load_chunk<Cache::stream>(x, c0, p.n, xs[k], static_cast<unsigned short>(0));
      load_chunk<Cache::stream>(res, c0, p.n, h[k], 0.f);
    } else {
      h[k] = zero_vec<float, V>();
    }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (!(valid && c0 < p.n)) continue;
#pragma unroll
    for (int e = 0; e < V; ++e) h[k].v[e] = bits16_to_float(xs[k].v[e], is_bf16) + h[k].v[e];
    store_chunk<Cache::stream>(res_out, c0, p.n, h[k]);
  }
}

// The statistic a chunk contributes to the first reduction: sum(x) for LayerNorm's mean,
// sum(x^2) for RMSNorm. Columns outside the row were loaded as 0 and add nothing.
template <bool kLayerNorm, class T, int V>
__device__ __forceinline__ float first_stat(const Vec<T, V>& h) {
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float f = elem(h, e);
    s += kLayerNorm ? f : f * f;
  }
  return s;
}

// sum((x - mean)^2) over a chunk's columns inside the row. Interior chunks sum all V; the
// (at most two) edge chunks of a row take the out-of-line masked path. (Summing the zero
// padding and subtracting n_pad * mean^2 afterwards cancels catastrophically when the
// variance is small against mean^2: rstd off by 1 % on N = 1 rows.)
template <class T, int V>
__device__ __noinline__ float centered_squares_masked(Vec<T, V> h, int c0, int n, float mean) {
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float d = elem(h, e) - mean;
    if (c0 + e >= 0 && c0 + e < n) s += d * d;
  }
  return s;
}

template <class T, int V>
__device__ __forceinline__ float centered_squares_whole(const Vec<T, V>& h, float mean) {
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float d = elem_permuted(h, e) - mean;
    s += d * d;
  }
  return s;
}

template <class T, int V>
__device__ __forceinline__ float centered_squares(const Vec<T, V>& h, int c0, int n, float mean) {
  if (!chunk_inside(c0, V, n)) return centered_squares_masked(h, c0, n, mean);
  return centered_squares_whole(h, mean);
}

// y = (h - mean) * rstd * (weight + weight_offset) + bias for one chunk (RMSNorm: mean = 0,
// no bias). Weight and bias come from the thread's staged slots (core/vector_stage.cuh).
template <bool kLayerNorm, class Stage, class T, int V>
__device__ __forceinline__ void write_output(const NormFwdParams& p, const Stage& weight,
                                             const Stage& bias, long long row, int k, int c0,
                                             const Vec<T, V>& h, float mean, float rstd) {
  using IO = OperandIO<T, Stage::kTypedRows>;
  float w[V], y[V];
  weight.load(k, c0, p.n, w, 1.f);
  const float offset = p.weight.data ? p.weight_offset : 0.f;  // no weight: a factor of exactly 1
  if constexpr (kLayerNorm) {
    float b[V];
    bias.load(k, c0, p.n, b, 0.f);
#pragma unroll
    for (int e = 0; e < V; ++e) y[e] = (elem_again(h, e) - mean) * rstd * (w[e] + offset) + b[e];
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) y[e] = elem_again(h, e) * rstd * (w[e] + offset);
  }
  IO::template store<Cache::stream, V>(IO::mutable_row(p.y, row), p.y.dtype, c0, p.n, y);
}

// One output chunk of a whole-chunk row (NormFwdMode::whole). For 16-bit outputs the
// centring folds into one FMA, h * rstd - mean * rstd: its rounding (at most |mean| * rstd *
// 2^-24) stays far below the output's resolution; fp32 outputs keep the exact (h - mean) * rstd.
// The output pass converts with byte permutes (elem_permuted), the statistics pass with elem():
// given one spelling for both, ptxas keeps the first pass's floats alive across the reduction.
// LayerNorm's squares pass already takes the permutes, so its output pass keeps elem_again.
// (docs/perf/norm.md#forward-design)
template <bool kLayerNorm, bool kOffset, class T, int V, class WV>
__device__ __forceinline__ void normalized_chunk(const Vec<T, V>& h, const WV& w, const WV& b, float mean, float rstd,
                                                float offset, float (&out)[V]) {
  const float shift = -mean * rstd;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    float s;
    if constexpr (!kLayerNorm) s = elem_permuted(h, e) * rstd;
    else if constexpr (sizeof(T) == 2) s = fmaf(elem_again(h, e), rstd, shift);
    else s = (elem_again(h, e) - mean) * rstd;
    const float scale = kOffset ? elem(w, e) + offset : elem(w, e);
    out[e] = kLayerNorm ? fmaf(s, scale, elem(b, e)) : s * scale;
  }
}
template <bool kLayerNorm, bool kOffset, class T, int V, class WV>
__device__ __forceinline__ void write_chunk_whole(T* y, int c0, const Vec<T, V>& h, const WV& w, const WV& b,
                                                  float mean, float rstd, float offset) {
  float out[V];
  normalized_chunk<kLayerNorm, kOffset>(h, w, b, mean, rstd, offset, out);
  store_whole<Cache::stream>(y + c0, from_floats<T>(out));
}

// A window of kWindow chunk slots per operand (kWindow < kItems: the whole tile's weight and
// bias do not fit shared memory next to another CTA's). Slot k % kWindow holds chunk k: the
// first kWindow chunks were copied at kernel start; chunk k + kWindow is copied into its slot
// once chunk k's output is stored (the thread is the slot's only reader, and the store
// depends on the slot's value, so the read has completed), one commit group per chunk.
// kFull: the row fills the tile (every chunk of every thread inside it), so no row-end tests.
// (docs/perf/norm.md#forward-design)
template <bool kLayerNorm, bool kOffset, bool kWide, int kItems, int kWindow, bool kFull, class Stage, class T, int V>
__device__ __forceinline__ void write_row_whole(const NormFwdParams& p, const Stage& weight, const Stage& bias,
                                                const RowTeam& team, long long row, const Vec<T, V> (&h)[kItems],
                                                float mean, float rstd) {
  T* y = mutable_row_of<T>(p.y, row);
  keep_here(y);
  // The whole tile staged or none of it: one source a row (VectorStage::whole_source).
  const auto wsrc = weight.template whole_source<kWide>(team.rank(), team.size());
  const auto bsrc = kLayerNorm ? bias.template whole_source<kWide>(team.rank(), team.size()) : wsrc;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if (k >= kWindow) {
      // Refill groups committed so far: one per chunk j < k with j + kWindow < kItems; chunk
      // k's is the (k - kWindow)-th, so the later ones may still be in flight.
      const int committed = k < kItems - kWindow ? k : kItems - kWindow;
      Stage::wait_prior(committed - (k - kWindow) - 1);
    }
    const int c0 = chunk_col(k, team, V, 0);
    if (kFull || c0 < p.n) {
      const auto w = kWindow == kItems ? Stage::template whole_at<kWide>(wsrc, k)
                                       : weight.template whole_chunk<kWide>(k % kWindow, c0);
      const auto b = !kLayerNorm           ? w
                     : kWindow == kItems ? Stage::template whole_at<kWide>(bsrc, k)
                                         : bias.template whole_chunk<kWide>(k % kWindow, c0);
      write_chunk_whole<kLayerNorm, kOffset>(y, c0, h[k], w, b, mean, rstd, p.weight_offset);
    }
    if (k + kWindow < kItems) {
      const int c1 = chunk_col(k + kWindow, team, V, 0);
      if (kFull || c1 < p.n) {
        weight.template copy<kFull>(k % kWindow, c1, p.n);
        if (kLayerNorm) bias.template copy<kFull>(k % kWindow, c1, p.n);
      }
      Stage::commit();
    }
  }
}

// The framed build's output (NormFwdMode::framed: x and y share each row's frame; weight and bias
// in x's dtype, or kWide: fp32 beside 16-bit rows, 32-byte chunks): y's end chunks through
// store_framed; weight and bias chunks lie off the 16-byte grid in that frame, so they are never
// staged and are read inline (load_chunk's kInlineInside: 16-byte chunks in 32-bit words, the
// 32-byte fp32 chunks in the widest aligned loads). (docs/perf/norm.md#odd-rows)
template <bool kLayerNorm, bool kOffset, bool kWide, int kItems, class T, int V>
__device__ __forceinline__ void write_row_framed(const NormFwdParams& p, const RowTeam& team, long long row, int off,
                                                 const Vec<T, V> (&h)[kItems], float mean, float rstd) {
  using W = std::conditional_t<kWide, float, T>;
  T* y = mutable_row_of<T>(p.y, row);
  keep_here(y);
  const W* weight = static_cast<const W*>(p.weight.data);
  const W* bias = static_cast<const W*>(p.bias.data);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (c0 < p.n) {
      Vec<W, V> w, b;
      load_chunk<Cache::readonly, true>(weight, c0, p.n, w, from_float<W>(0.f));
      if constexpr (kLayerNorm) load_chunk<Cache::readonly, true>(bias, c0, p.n, b, from_float<W>(0.f));
      else b = w;
      float out[V];
      normalized_chunk<kLayerNorm, kOffset>(h[k], w, b, mean, rstd, p.weight_offset, out);
      store_framed<Cache::stream>(y, c0, p.n, from_floats<T>(out));
    }
  }
}

// The streaming kernel's output: weight and bias straight from global memory.
template <bool kLayerNorm, class T, int V>
__device__ __forceinline__ void write_output_unstaged(const NormFwdParams& p, long long row, int c0,
                                                      const Vec<T, V>& h, float mean, float rstd) {
  float w[V], b[V], y[V];
  if (p.weight.data) load_chunk_f<Cache::readonly, V>(p.weight.data, p.weight.dtype, c0, p.n, w, 0.f);
  if (kLayerNorm && p.bias.data) load_chunk_f<Cache::readonly, V>(p.bias.data, p.bias.dtype, c0, p.n, b, 0.f);
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float scale = p.weight.data ? w[e] + p.weight_offset : 1.f;
    const float shift = (kLayerNorm && p.bias.data) ? b[e] : 0.f;
    y[e] = (elem_again(h, e) - mean) * rstd * scale + shift;
  }
  store_chunk_f<Cache::stream, V>(mutable_row_of(p.y, row), p.y.dtype, c0, p.n, y);
}

__device__ __forceinline__ void write_stats(const NormFwdParams& p, const RowTeam& team, long long row,
                                            bool valid, float mean, float rstd) {
  if (valid && team.rank() == 0) {
    if (p.mean) p.mean[row] = mean;
    if (p.rstd) p.rstd[row] = rstd;
  }
}

// The whole builds' statistics pass: the sums of d = x - s and d^2 over the thread's columns
// inside the row, and their count. kFramed: rows in their frame, whose end chunks are partly
// outside it; otherwise every chunk below n is whole (kFull: all of them).
template <bool kFramed, bool kFull, class T, int V, int kItems>
__device__ __forceinline__ void deviations_about(const Vec<T, V> (&h)[kItems], const RowTeam& team, int off, int n,
                                                 float s, float& d1, float& d2, int& count) {
  auto add = [&](const Vec<T, V>& v, int e) {
    const float d = (std::is_same_v<T, half> ? elem_permuted(v, e) : elem(v, e)) - s;
    d1 += d;
    d2 = fmaf(d, d, d2);
  };
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    if (kFull || (kFramed ? chunk_inside(c0, V, n) : c0 < n)) {
#pragma unroll
      for (int e = 0; e < V; ++e) add(h[k], e);
      count += V;
    } else if (kFramed && c0 < n) {
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (c0 + e >= 0 && c0 + e < n) add(h[k], e);
      count += chunk_count(c0, V, n);
    }
  }
}

// The storage tensor sets the row's frame: residual_out when fused, else x. The generic build's
// fp32 rows (kAnyDtype) frame it in chunks of its own dtype's width (8 bytes for 16-bit).
template <class T, bool kAnyDtype = false>
__device__ __forceinline__ int row_frame(const NormFwdParams& p, long long row) {
  const RowArg& a = p.residual.data ? p.residual_out : p.x;
  if constexpr (kAnyDtype) {
    return frame_offset(row_of(a, row), kVec<T>, static_cast<unsigned>(dtype_bytes(a.dtype)));
  } else {
    return frame_offset<T>(row_of<T>(a, row));
  }
}

// rstd from the reduced sum of squares (no fmaxf here: it would turn a NaN row into 0).
__device__ __forceinline__ float finish_rstd(float sum_sq, int n, float eps) { return rsqrtf(sum_sq / n + eps); }

// kFull (the builds of full_form_built): the row fills the tile, n == items x team threads x V,
// so every chunk of every thread lies inside it, and every operand is whole aligned chunks: the
// chunk loops carry no row-end or alignment tests, and ptxas schedules them more freely (see
// forward_full_tile). The grouped fused builds' full form writes its output as the whole build
// does (write_row_whole), which spills less.
// kWideVec: LayerNorm's whole builds and the framed builds for an fp32 weight and bias beside
// 16-bit rows, a kernel apart, not a run-time branch. (docs/perf/norm.md#forward-design)
template <class T, int kItems, bool kLayerNorm, NormFwdMode kMode, bool kFull = false, bool kWideVec = false>
__device__ __forceinline__ void norm_fwd_row(const NormFwdParams& p) {
  constexpr bool kTyped = kMode != NormFwdMode::generic;
  // framed: whole's loops on rows in their frame (x's and y's end chunks masked, weight and bias
  // read off the 16-byte grid); no full form, an fp32 weight only as kWideVec.
  constexpr bool kFramed = kMode == NormFwdMode::framed;
  constexpr bool kWhole = kMode == NormFwdMode::whole || kMode == NormFwdMode::whole_cluster || kFramed;
  static_assert(!kFull || full_form_built(kMode, kLayerNorm, kItems), "a build without a full-tile form");
  constexpr bool kWholeOut = kWhole || kFull;  // the output through write_row_whole
  // The generic build keeps fp32 rows whatever x's and residual_out's dtypes (forward_storage).
  constexpr bool kAnyDtype = !kTyped;
  static_assert(!kAnyDtype || sizeof(T) == 4, "the generic build keeps fp32 rows");
  constexpr int V = kVec<T>;
  // An fp32 weight (and bias) beside 16-bit rows: a run-time branch in RMSNorm's typed and whole
  // builds and LayerNorm's typed build; LayerNorm's whole builds and the framed builds take
  // kWideVec instead, as the branch compiled in slows the whole builds' long rows.
  static_assert(!kWideVec || ((kLayerNorm || kFramed) && kWhole && sizeof(T) == 2), "16-bit whole or framed builds");
  constexpr bool kMaybeWide =
      kTyped && sizeof(T) == 2 && !kFramed && (!kLayerNorm || kMode == NormFwdMode::typed || kWideVec);
  using Stage = VectorStage<T, kTyped, V, kMaybeWide, kMode == NormFwdMode::whole,
                            forward_staging(kLayerNorm, kMode, sizeof(T))>;
  extern __shared__ __align__(16) unsigned char stage_smem[];
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const int off = !valid || (kWholeOut && !kFramed) ? 0 : row_frame<T, kAnyDtype>(p, row);
  // The whole builds' threads whose chunks all lie inside the row (every thread where the row
  // fills the tile) take the full form's loops: no row-end test a chunk, one test a row
  // (docs/perf/norm.md#forward-design).
  constexpr bool kInsidePath = !kFull && inside_path_built(kMode, kLayerNorm, kItems);
  const bool inside = kInsidePath && valid && chunk_col(kItems - 1, team, V, 0) + V <= p.n;

  // Weight and bias copies first: they complete under the row's loads and reduction. The one-CTA
  // whole builds copy for rows past the last too (the weight is every row's): no branch a chunk.
  constexpr int kWindow = forward_stage_window(kItems, kLayerNorm, kMode);
  constexpr bool kCopyAlways = kMode == NormFwdMode::whole || kFramed;  // framed: nothing staged
  const Stage weight = Stage::make(p.weight, stage_smem, p.stage_operands, off);
  const Stage bias = Stage::make(p.bias, stage_smem + weight.region_bytes(kWindow), p.stage_operands, off);
  // Those builds' one-CTA rows stage nothing (the weight comes through L1): one uniform branch
  // skips the loop, whose address work would otherwise run predicated off a chunk at a time.
  if (!kCopyAlways || weight.staged() || (kLayerNorm && bias.staged())) {
    if (inside) {
#pragma unroll
      for (int k = 0; k < kWindow; ++k) {
        const int c0 = chunk_col(k, team, V, off);
        weight.template copy<true>(k, c0, p.n);
        if (kLayerNorm) bias.template copy<true>(k, c0, p.n);
      }
    } else {
#pragma unroll
      for (int k = 0; k < kWindow; ++k) {
        const int c0 = chunk_col(k, team, V, off);
        if ((kCopyAlways || valid) && (kFull || c0 < p.n)) {
          weight.template copy<kFull>(k, c0, p.n);
          if (kLayerNorm) bias.template copy<kFull>(k, c0, p.n);
        }
      }
    }
  }
  Stage::commit();

  Vec<T, V> h[kItems];
  // The fused residual (no LayerNorm has one) on tiles of up to kFusedAheadItems chunks: every
  // load before the first store; the generic fp32 tile's through load_fused_f32, the typed tile's
  // as the grouped build, in one group. Larger tiles lack the registers (the fp32 8-chunk tile
  // would take 82). (docs/perf/norm.md#fused-residual-design)
  constexpr bool kFusedF32 = kMode == NormFwdMode::generic && std::is_same_v<T, float> && !kLayerNorm &&
                             kItems <= kFusedAheadItems;
  constexpr bool kFusedTyped = kMode == NormFwdMode::typed && !kLayerNorm && kItems <= kFusedAheadItems;
  if constexpr (is_fused_grouped(kMode)) {
    load_fused_grouped<kFusedLoadGroup, kFull>(p, team, row, valid, off, h);
  } else if (kFusedF32 && p.residual.data != nullptr && p.residual.dtype == DType::f32 && p.x.dtype != DType::f32 &&
             p.residual_out.dtype == DType::f32) {
    if constexpr (kFusedF32) load_fused_f32(p, team, row, valid, off, h);
  } else if (kFusedTyped && p.residual.data != nullptr) {
    if constexpr (kFusedTyped) load_fused_grouped<kItems, false>(p, team, row, valid, off, h);
  } else {
    constexpr bool kInlineX = !kAnyDtype && sizeof(T) == 2;
    // x's row in its dtype T (the generic build's fp32 rows may hold 16-bit x: load_input alone).
    const T* x = kAnyDtype ? nullptr : row_of<T>(p.x, valid ? row : 0);
    if constexpr (kWhole) keep_here(x);
    if (inside) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) load_whole<Cache::stream>(x + chunk_col(k, team, V, off), h[k]);
    } else
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if constexpr (kWhole) {
        reinterpret_cast<uint4&>(h[k]) = make_uint4(0u, 0u, 0u, 0u);
        if constexpr (kFramed) {
          if (valid && c0 < p.n) load_framed<Cache::stream>(x, c0, p.n, h[k], from_float<T>(0.f), k == 0, true);
        } else if (valid && (kFull || c0 < p.n)) {
          load_whole<Cache::stream>(x + c0, h[k]);
        }
      } else if (valid && c0 < p.n) {
        // x alone sets the frame: 16-bit rows' end chunks inline (load_framed), no call that
        // waits for its loads before the row's next chunks are asked for; fp32 rows keep
        // load_input, faster for them (docs/perf/norm.md#odd-rows).
        if (kInlineX && p.residual.data == nullptr)
          load_framed<Cache::stream>(x, c0, p.n, h[k], from_float<T>(0.f), k == 0, true);
        else
          load_input<Cache::stream, kTyped, kAnyDtype>(p, row, c0, h[k]);
      } else {
        h[k] = zero_vec<T, V>();
      }
    }
    if (kInlineX && p.residual.data == nullptr) lift_frame_head(h[0], chunk_col(0, team, V, off));
  }
  cluster_reduce_ready(team);  // every peer has started and initialised its barriers

  float mean = 0.f, rstd;
  if constexpr (kLayerNorm) {
    // The row's mean and M2 in one exchange across its warps and CTAs (row_moments). The
    // thread's own sum, mean and M2 about that mean come first, over its registers; its M2
    // about any other m is then M2 + count (mean - m)^2.
    float sum = 0.f, own_mean = 0.f, own_m2 = 0.f;
    int count = 0;
    // The whole builds in one pass about one of the thread's values s: M2 = sum (x - s)^2
    // - (sum (x - s))^2 / count loses at most ~count ulps, as (s - mean)^2 <= M2; 4 instructions
    // an element, not 5. fp16 converts with the permutes here: with the output pass's spelling
    // ptxas keeps the floats across the reduction. (docs/perf/norm.md#forward-design)
    if constexpr (kWhole) {
      // Framed rows: s from the head chunk's last column (its first may lie before the row), and
      // the end chunks' columns outside the row left out.
      const float s = kFramed && chunk_col(0, team, V, off) < 0 ? elem(h[0], V - 1) : elem(h[0], 0);
      float d1 = 0.f, d2 = 0.f;
      if (inside) deviations_about<false, true>(h, team, off, p.n, s, d1, d2, count);
      else deviations_about<kFramed, kFull>(h, team, off, p.n, s, d1, d2, count);
      if (count > 0) {
        const float q = __fdividef(d1, static_cast<float>(count));
        sum = fmaf(static_cast<float>(count), s, d1);
        own_mean = s + q;
        own_m2 = fmaf(-d1, q, d2);
      }
    } else {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int c0 = chunk_col(k, team, V, off);
        sum += first_stat<true>(h[k]);  // columns outside the row were loaded as 0
        if (valid && c0 < p.n) count += chunk_count(c0, V, p.n);
      }
      own_mean = count > 0 ? __fdividef(sum, static_cast<float>(count)) : 0.f;
#pragma unroll
      for (int k = 0; k < kItems; ++k) own_m2 += centered_squares(h[k], chunk_col(k, team, V, off), p.n, own_mean);
    }
    const RowMoments m = row_moments<kWhole>(sum, count, p.n, [&](float about) {
      const float d = own_mean - about;
      return count > 0 ? own_m2 + static_cast<float>(count) * d * d : 0.f;  // no 0 * inf
    }, team, reduce);
    mean = m.mean;
    rstd = finish_rstd(m.m2, p.n, p.eps);
  } else {
    float sum_sq = 0.f;
#pragma unroll
    for (int k = 0; k < kItems; ++k) sum_sq += first_stat<false>(h[k]);
    rstd = finish_rstd(row_reduce<kWhole>(sum_sq, Sum{}, team, reduce), p.n, p.eps);
  }
  write_stats(p, team, row, valid, mean, rstd);
  Stage::wait();
  if constexpr (kWholeOut) {
    if (!valid) return;
    if constexpr (kFramed) {
      // The weight offset's form for RMSNorm only: LayerNorm's is 0 (its API has none), and a dead
      // form still enlarges the framed kernel, which is issue-bound (docs/perf/norm.md#odd-rows).
      if (!kLayerNorm && p.weight_offset != 0.f)
        write_row_framed<kLayerNorm, true, kWideVec, kItems>(p, team, row, off, h, mean, rstd);
      else
        write_row_framed<kLayerNorm, false, kWideVec, kItems>(p, team, row, off, h, mean, rstd);
      return;
    } else {
      auto out = [&, team = team, row = row](auto full) {
        constexpr bool F = decltype(full)::value;
        if constexpr (kWideVec) {  // LayerNorm's whole builds: no weight offset
          write_row_whole<kLayerNorm, false, true, kItems, kWindow, F>(p, weight, bias, team, row, h, mean, rstd);
          return;
        } else {
          if constexpr (kMaybeWide) {  // one branch on the weight's dtype, outside the chunk loop
            if (weight.wide()) {
              if (p.weight_offset != 0.f)
                write_row_whole<kLayerNorm, true, true, kItems, kWindow, F>(p, weight, bias, team, row, h, mean, rstd);
              else
                write_row_whole<kLayerNorm, false, true, kItems, kWindow, F>(p, weight, bias, team, row, h, mean, rstd);
              return;
            }
          }
          if (p.weight_offset != 0.f)
            write_row_whole<kLayerNorm, true, false, kItems, kWindow, F>(p, weight, bias, team, row, h, mean, rstd);
          else
            write_row_whole<kLayerNorm, false, false, kItems, kWindow, F>(p, weight, bias, team, row, h, mean, rstd);
        }
      };
      if constexpr (kInsidePath) {
        if (inside) return out(std::true_type{});
      }
      out(std::bool_constant<kFull>{});
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if (valid && c0 < p.n) write_output<kLayerNorm>(p, weight, bias, row, k, c0, h[k], mean, rstd);
    }
  }
}

template <class T, int kItems, bool kLayerNorm, NormFwdMode kMode, bool kFull = false, bool kWideVec = false>
__global__ void __launch_bounds__(kMaxRowThreads) norm_fwd_resident(const __grid_constant__ NormFwdParams p) {
  norm_fwd_row<T, kItems, kLayerNorm, kMode, kFull, kWideVec>(p);
}

// The bounded builds: two 512-thread CTAs an SM, so at most 64 registers. A separate kernel,
// not a computed bound: an explicit minimum of 1 CTA an SM on the other kernel changes ptxas's
// allocation (more registers, fewer CTAs an SM). Built for whole_cluster, fused_grouped, and the
// fp16 typed RMSNorm tile of 8 (kBoundedTyped). (docs/perf.md#registers-decide-the-layout)
template <class T, int kItems, bool kLayerNorm, NormFwdMode kMode, bool kFull = false, bool kWideVec = false>
__global__ void __launch_bounds__(kMaxRowThreads, 2) norm_fwd_resident_bounded(const __grid_constant__ NormFwdParams p) {
  norm_fwd_row<T, kItems, kLayerNorm, kMode, kFull, kWideVec>(p);
}

// The typed RMSNorm tile of 8 compiles to 64 registers for bf16 and fp32 but to 74 for fp16,
// which would put fp16 on the row configs of kernels past 64 registers (256-thread CTAs, wider
// clusters). Bounded to 64, fp16 takes bf16's configs; it serves fp16 rows that are not whole
// chunks (the fused residual runs the grouped builds). (docs/perf.md#registers-decide-the-layout)
template <class T, int kItems, bool kLayerNorm>
inline constexpr bool kBoundedTyped = std::is_same_v<T, half> && kItems == kBoundedForwardItems && !kLayerNorm;

template <class T, bool kLayerNorm>
__global__ void __launch_bounds__(kMaxRowThreads) norm_fwd_streaming(const __grid_constant__ NormFwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  auto [team, reduce, row, valid] = start_row(p, scratch);
  const int off = valid ? row_frame<T>(p, row) : 0;
  const int chunks = valid ? ceil_div(p.n + off, V) : 0;
  // Later passes read h back from residual_out when fused (this thread wrote those chunks).
  // `row` (and below the team's rank and size) by copy: the CUDA build is C++17, where a lambda
  // cannot capture a structured binding.
  const bool fused = p.residual.data != nullptr;
  auto reload = [&, row = row](int c0, Vec<T, V>& h) {
    load_chunk(row_of<T>(fused ? p.residual_out : p.x, row), c0, p.n, h, from_float<T>(0.f));
  };

  float stat = 0.f;
  int count = 0;
  for (int j = team.rank(); j < chunks; j += team.size()) {
    Vec<T, V> h;
    load_input<Cache::normal, false>(p, row, j * V - off, h);
    stat += first_stat<kLayerNorm>(h);
    count += chunk_count(j * V - off, V, p.n);
  }
  cluster_reduce_ready(team);
  float mean = 0.f, rstd;
  if constexpr (kLayerNorm) {
    // The squares re-read the row (about the warp's mean, row_moments): one exchange.
    const RowMoments m = row_moments(stat, count, p.n, [&, first = team.rank(), step = team.size()](float about) {
      float sq = 0.f;
      for (int j = first; j < chunks; j += step) {
        Vec<T, V> h;
        reload(j * V - off, h);
        sq += centered_squares(h, j * V - off, p.n, about);
      }
      return sq;
    }, team, reduce);
    mean = m.mean;
    rstd = finish_rstd(m.m2, p.n, p.eps);
  } else {
    rstd = finish_rstd(row_reduce(stat, Sum{}, team, reduce), p.n, p.eps);
  }
  write_stats(p, team, row, valid, mean, rstd);
  for (int j = team.rank(); j < chunks; j += team.size()) {
    Vec<T, V> h;
    reload(j * V - off, h);
    write_output_unstaged<kLayerNorm>(p, row, j * V - off, h, mean, rstd);
  }
}

template <class T, int I, bool kLayerNorm, NormFwdMode kMode, bool kFull = false, bool kWideVec = false>
void* pick_resident(const char* op) {
  if constexpr (!forward_tile_built(sizeof(T), kMode, I))
    throw Error(std::string(op) + ": internal: no forward kernel with " + std::to_string(I) + " items");
  else if constexpr (kMode == NormFwdMode::whole_cluster || is_fused_grouped(kMode) ||
                     (kMode == NormFwdMode::typed && kBoundedTyped<T, I, kLayerNorm>))
    return reinterpret_cast<void*>(norm_fwd_resident_bounded<T, I, kLayerNorm, kMode, kFull, kWideVec>);
  else
    return reinterpret_cast<void*>(norm_fwd_resident<T, I, kLayerNorm, kMode, kFull, kWideVec>);
}

// A build in its full-tile form where the row fills the tile (forward_full_tile: only the
// tiles of full_form_built are built twice).
template <class T, int I, bool kLayerNorm, NormFwdMode kMode, bool kWideVec = false>
void* pick_maybe_full(const char* op, bool full) {
  if constexpr (full_form_built(kMode, kLayerNorm, I)) {
    if (full) return pick_resident<T, I, kLayerNorm, kMode, true, kWideVec>(op);
  }
  return pick_resident<T, I, kLayerNorm, kMode, false, kWideVec>(op);
}

// LayerNorm's whole build for an fp32 weight and bias (16-bit rows), in both forms.
template <class T, int I>
void* pick_wide_whole(const char* op, bool full) {
  if constexpr (sizeof(T) == 2)
    return pick_maybe_full<T, I, true, NormFwdMode::whole, true>(op, full);
  else
    throw Error(std::string(op) + ": internal: an fp32 weight beside fp32 rows is not wide");
}

template <class T, int I, bool kLayerNorm>
void* pick_mode(const char* op, NormFwdMode mode, bool full, bool wide_whole) {
  if (wide_whole && mode == NormFwdMode::framed) {
    if constexpr (sizeof(T) == 2) return pick_resident<T, I, kLayerNorm, NormFwdMode::framed, false, true>(op);
    else throw Error(std::string(op) + ": internal: an fp32 weight beside fp32 rows is not wide");
  }
  // LayerNorm's fp32 weight and bias take the whole build on cluster rows too (forward_mode_for_config).
  if constexpr (kLayerNorm) {
    if (wide_whole && (mode == NormFwdMode::whole || mode == NormFwdMode::whole_cluster))
      return pick_wide_whole<T, I>(op, full);
  }
  switch (mode) {
    // LayerNorm's, built for the 8-item tile only, the one cluster rows take (other tiles and
    // RMSNorm: the whole build).
    case NormFwdMode::whole_cluster:
      if constexpr (forward_kernel_build(NormFwdMode::whole_cluster, I) == NormFwdMode::whole_cluster && kLayerNorm)
        return pick_maybe_full<T, I, kLayerNorm, NormFwdMode::whole_cluster>(op, full);
      return pick_maybe_full<T, I, kLayerNorm, NormFwdMode::whole>(op, full);
    case NormFwdMode::whole: return pick_maybe_full<T, I, kLayerNorm, NormFwdMode::whole>(op, full);
    case NormFwdMode::framed: return pick_resident<T, I, kLayerNorm, NormFwdMode::framed>(op);
    case NormFwdMode::typed: return pick_resident<T, I, kLayerNorm, NormFwdMode::typed>(op);
    case NormFwdMode::fused_grouped:  // RMSNorm's 8-item tile only (fused_forward_build)
      if constexpr (forward_kernel_build(NormFwdMode::fused_grouped, I) == NormFwdMode::fused_grouped && !kLayerNorm)
        return pick_maybe_full<T, I, kLayerNorm, NormFwdMode::fused_grouped>(op, full);
      return pick_resident<T, I, kLayerNorm, NormFwdMode::typed>(op);
    default: return pick_resident<T, I, kLayerNorm, NormFwdMode::generic>(op);
  }
}

// full: the row fills the tile (forward_full_tile); only the builds of full_form_built have that form.
// wide_whole: the kWideVec builds (forward_wide_whole: an fp32 weight and bias, 16-bit rows).
template <class T, int I>
void* resident_kernel(const char* op, bool layer_norm, NormFwdMode mode, bool wide_whole, bool full = false) {
  return layer_norm ? pick_mode<T, I, true>(op, mode, full, wide_whole) : pick_mode<T, I, false>(op, mode, full, wide_whole);
}

}  // namespace

int norm_forward_regs(const char* op, bool layer_norm, NormFwdMode mode, DType storage, bool wide_whole) {
  return dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernel_regs(op, resident_kernel<T, 8>(op, layer_norm, mode, wide_whole));
  });
}

void launch_norm_forward(const char* op, bool layer_norm, NormFwdMode mode, DType storage, const NormFwdParams& p,
                         const RowConfig& cfg, bool full_tile, bool wide_whole, cudaStream_t stream) {
  const long long groups = ceil_div(p.rows, cfg.rows_per_cta);
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      auto elem = [&](const RowArg& a) {  // bytes of an operand's element as staged (0: absent)
        return a.data == nullptr ? 0 : static_cast<int>(dtype_size(a.dtype));
      };
      auto stage_bytes = [&](int ctas_per_sm) {
        return forward_stage_bytes(cfg, forward_kernel_build(mode, I), layer_norm, elem(p.weight), elem(p.bias),
                                   ctas_per_sm);
      };
      std::size_t smem = 0;
      void* k;
      if constexpr (I == 0) {
        k = reinterpret_cast<void*>(layer_norm ? norm_fwd_streaming<T, true> : norm_fwd_streaming<T, false>);
      } else {
        k = resident_kernel<T, I>(op, layer_norm, mode, wide_whole);
        // The SM's CTAs (the occupancy calculator, unstaged) only where staging is in question.
        if (stage_bytes(1) > 0) smem = stage_bytes(blocks_per_sm(op, k, cfg.cta_threads, 0));
        // The full-tile form where the row fills the tile, unless its registers cost CTAs an SM
        // (LayerNorm bf16's 8-chunk whole kernel: 75 registers full against 64, three 256-thread
        // CTAs an SM against four). (docs/perf/norm.md#forward-design)
        if (full_tile) {
          void* full = resident_kernel<T, I>(op, layer_norm, mode, wide_whole, true);
          if (blocks_per_sm(op, full, cfg.cta_threads, smem) >= blocks_per_sm(op, k, cfg.cta_threads, smem)) k = full;
        }
      }
      if constexpr (I > 0) {
        if (forward_staging(layer_norm, forward_kernel_build(mode, I), sizeof(T)) == Staging::always && smem == 0)
          throw Error(std::string(op) + ": internal: a build of fixed staging launched otherwise");
      }
      NormFwdParams q = p;
      q.stage_operands = smem > 0;
      launch_rows(op, reinterpret_cast<void (*)(NormFwdParams)>(k), cfg, groups, smem, stream, q);
    });
  });
}

}  // namespace tachyon::detail
