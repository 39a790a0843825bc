// RMSNorm / LayerNorm backward.
//
// dx: per row, from x, dy, the saved statistics and one row reduction (two sums at once for
// LayerNorm). dw, db: sums over rows. Each CTA (or cluster) walks a fixed set of rows (a persistent
// grid) and keeps its threads on the same columns (rows off the 16-byte grid: each team on its first
// row's frame, which all its rows share), so the column sums accumulate per thread, in registers or in
// thread-private shared-memory slots; they leave as one fp32 partial row per row group, and
// column_sum_kernel adds the partials in a fixed order: deterministic, no float atomics.
// The 2- and 4-chunk tiles are pipelined: the next row's loads are issued before the current row's
// reduction (norm_bwd_resident_pipelined). Shared memory is L1 that the loads in flight no longer
// have, so the slot sets are kept small.
// (docs/perf/norm.md#backward-design, docs/perf/norm.md#backward-and-l1)
#include <climits>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "core/host_device.h"
#include "core/device_info.h"
#include "core/dtype.cuh"
#include "core/reduce.cuh"
#include "core/row_access.cuh"
#include "core/row_launch.cuh"
#include "core/variants.h"
#include "core/vec.cuh"
#include "norm/norm_params.h"

namespace tachyon::detail {
namespace {

// The weight factor (w + weight_offset) of a chunk, or 1 without a weight. The weight's own
// dtype at run time: the resident kernels read it once, into shared memory, so an fp32 weight
// beside 16-bit x and dy (mixed precision) still runs the typed row loop.
template <int V>
__device__ __forceinline__ void load_scale(const NormBwdParams& p, int c0, float (&w)[V]) {
  if (p.weight.data) {
    load_chunk_f<Cache::normal, V>(p.weight.data, p.weight.dtype, c0, p.n, w, 0.f);
#pragma unroll
    for (int e = 0; e < V; ++e) w[e] += p.weight_offset;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) w[e] = 1.f;
  }
}

// A chunk of dy into the storage dtype's registers, from dy's own dtype: an fp32 row (the fused
// residual's fp32 stream under autocast) may take 16-bit dy (its y's gradient); validated on the
// host, where 16-bit rows take dy of their own dtype only. The run-time-dtype loops only.
template <class T, int V>
__device__ __forceinline__ void load_dy(const NormBwdParams& p, const void* dy_row, int c0, Vec<T, V>& dy) {
  if constexpr (sizeof(T) == 4) {
    if (p.dy.dtype != DType::f32) {
      load_chunk_f<Cache::stream, V>(dy_row, p.dy.dtype, c0, p.n, dy.v, 0.f);
      return;
    }
  }
  load_chunk<Cache::stream>(static_cast<const T*>(dy_row), c0, p.n, dy, from_float<T>(0.f));
}

// LayerNorm's 16-bit typed rows round as a 16-bit dx allows: rstd folded into the row's
// constants (chunk_gradients), the mean taken out of the thread's sum once (accumulate_sums).
// fp32 rows keep (x - mean) exact.
template <bool kLayerNorm, bool kTyped, class T>
constexpr bool kFoldedRows = kLayerNorm && kTyped && sizeof(T) == 2;

// Adds a chunk's share of (sum(wdy), sum((x - mean) * wdy)); the caller scales the second by
// rstd once (sum(xhat * wdy) with rstd factored out). Columns outside the row have dy = 0, so
// wdy = 0 and they add nothing. kUncentred: the second as sum(x * wdy), which the caller centres
// once (- mean * sum(wdy)): one instruction an element less, and the cancellation (~16 * |mean| /
// sigma ulps over a thread's 16 terms) is below a 16-bit dx's resolution.
template <bool kUncentred, class T, class D, int V>
__device__ __forceinline__ void accumulate_sums(const float (&w)[V], const Vec<T, V>& x, const Vec<D, V>& dy,
                                                float mean, Float2& part) {
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float wdy = elem(dy, e) * w[e];
    part.a += wdy;
    if constexpr (kUncentred) part.b = fmaf(elem(x, e), wdy, part.b);
    else part.b += (elem(x, e) - mean) * wdy;
  }
}

// dx = rstd * (wdy - mean(wdy) - xhat * mean(xhat * wdy)) (+ dresidual) for one chunk, and
// the chunk's dw, db terms added to dw_acc, db_acc. (RMSNorm: mean = 0 and mean(wdy) = 0;
// LayerNorm has no dresidual.) kTyped (rows of whole aligned chunks, dx of dtype T): one
// 16-byte store into `dx_row` (the row's dx, computed once a row) without edge or alignment
// tests (kFramed: in the row's frame); otherwise the run-time dtypes and edges. dresidual: the
// typed kDres build (RMSNorm, dresidual of dtype T in whole chunks) passes the chunk it loaded as
// `typed_dres` (a build, as a run-time branch made the typed kernels spill); the run-time-dtype
// loop loads it here (other callers pass any chunk: unused). (docs/perf/norm.md#rmsnorm-backward-with-dresidual)
template <bool kTyped, bool kLayerNorm, bool kDres, bool kFramed = false, bool kTight = false, class T, class D, int V>
__device__ __forceinline__ void chunk_gradients(const NormBwdParams& p, long long row, void* dx_row, int c0,
                                                const float (&w)[V], const Vec<T, V>& x, const Vec<D, V>& dy,
                                                float mean, float rstd, float mean_wdy, float mean_xhat_wdy,
                                                float (&dw_acc)[V], float (&db_acc)[V], const Vec<T, V>& typed_dres) {
  static_assert(!kDres || (kTyped && !kLayerNorm), "the kDres build is RMSNorm's typed loop");
  float dres[V], dx[V];
  const bool has_dres = kDres || (!kTyped && !kLayerNorm && p.dresidual.data);
  if constexpr (kDres) {
#pragma unroll
    for (int e = 0; e < V; ++e) dres[e] = elem(typed_dres, e);
  } else if (has_dres) {
    load_chunk_f<Cache::stream, V>(row_of(p.dresidual, row), p.dresidual.dtype, c0, p.n, dres, 0.f);
  }
  // LayerNorm's 16-bit typed rows fold rstd into the row's constants: 4 instructions an element
  // instead of 6. The rounding this moves (|mean| * rstd * 2^-24 in xhat) is far below a 16-bit
  // dx's resolution.
  constexpr bool kFolded = kFoldedRows<kLayerNorm, kTyped, T>;
  const float shift = -mean * rstd, a = rstd * mean_wdy, b = rstd * mean_xhat_wdy;
  // kTight (the 96-register bound): fp16 too converts with permutes in this second pass, else ptxas
  // keeps the first pass's floats live across the reduction and spills. (docs/perf/norm.md#register-partitions)
  auto again = [](const auto& v, int e) {
    if constexpr (kTight) return elem_permuted(v, e);
    else return elem_again(v, e);
  };
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float g = again(dy, e);
    float xhat;
    if constexpr (kFolded) {
      xhat = fmaf(again(x, e), rstd, shift);
      dx[e] = fmaf(-xhat, b, fmaf(g * w[e], rstd, -a));
    } else {
      xhat = (again(x, e) - mean) * rstd;
      dx[e] = rstd * (g * w[e] - mean_wdy - xhat * mean_xhat_wdy);
    }
    if (has_dres) dx[e] += dres[e];
    dw_acc[e] += g * xhat;
    db_acc[e] += g;
  }
  if constexpr (kFramed) store_framed<Cache::stream>(static_cast<T*>(dx_row), c0, p.n, from_floats<T>(dx));
  else if constexpr (kTyped) store_whole<Cache::stream>(static_cast<T*>(dx_row) + c0, from_floats<T>(dx));
  else store_chunk_f<Cache::stream, V>(dx_row, p.dx.dtype, c0, p.n, dx);
}

// Row statistics of the reduction: (mean(wdy), mean(xhat * wdy)); RMSNorm needs only the second.
template <bool kLayerNorm, class S>
__device__ __forceinline__ Float2 reduce_sums(Float2 part, const RowTeam& team, ReduceStateOf<S>& reduce, int n) {
  if constexpr (kLayerNorm) {
    // One reciprocal (loop-invariant: hoisted) instead of two IEEE divisions a row, each about
    // ten instructions and a slow-path branch in the row loop. RMSNorm keeps its one division:
    // the reciprocal made some of its kernels spill (ptxas -v). (docs/perf/norm.md#backward-design)
    const float inv_n = 1.f / static_cast<float>(n);
    const Float2 tot = row_reduce(part, Sum2{}, team, reduce);
    return {tot.a * inv_n, tot.b * inv_n};
  } else {
    return {0.f, row_reduce(part.b, Sum{}, team, reduce) / n};
  }
}

// kItems chunks of V fp32 values per thread in dynamic shared memory (weight factors, column
// sums), private to the thread and kept as 16-byte quads. Quad j of thread t sits at quad
// ((t / 8) * kQuads + j) * 8 + t % 8: the 8 threads of a quarter warp touch 128 consecutive
// bytes per quad (LDS.128 / STS.128 without bank conflicts; one chunk of 32 bytes per thread
// would be 2-way conflicted for 16-bit storage), and j only adds a compile-time offset
// (j * 128 bytes) to one per-thread base address, so no address per chunk stays live.
// Needs CTAs of a multiple of 8 threads (row configs use multiples of 32).
template <int kItems, int V>
struct ThreadSlots {
  static_assert(V % 4 == 0, "a chunk is whole quads");
  static constexpr int kQuads = kItems * V / 4;
  float4* base;

  __host__ __device__ static constexpr std::size_t floats(int cta_threads) {
    return static_cast<std::size_t>(cta_threads) * kQuads * 4;
  }
  __device__ static ThreadSlots at(float* region) {
    const unsigned t = threadIdx.x;
    return {reinterpret_cast<float4*>(region) + (t / 8) * kQuads * 8 + t % 8};
  }
  __device__ void load(int k, float (&v)[V]) const {
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      const float4 f = base[(k * (V / 4) + q) * 8];
      v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
    }
  }
  __device__ void store(int k, const float (&v)[V]) const {
#pragma unroll
    for (int q = 0; q < V / 4; ++q) base[(k * (V / 4) + q) * 8] = {v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]};
  }
};

// The register-sums tile's weight slots: chunk k of thread t at floats [(k * blockDim + t) * V]
// (the layout its row configs were measured with). Same size as a ThreadSlots set.
template <int kItems, int V>
struct StridedSlots {
  float* region;
  __device__ static StridedSlots at(float* r) { return {r}; }
  __device__ float* slot(int k) const {
    return region + (static_cast<std::size_t>(k) * blockDim.x + threadIdx.x) * V;
  }
  __device__ void load(int k, float (&v)[V]) const {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = slot(k)[e];
  }
  __device__ void store(int k, const float (&v)[V]) const {
#pragma unroll
    for (int e = 0; e < V; ++e) slot(k)[e] = v[e];
  }
};

// The weight slots of a 16-bit row whose weight has the row's dtype, kept as stored: 16 bytes
// a chunk, half the fp32 set; the factor (w + weight_offset, or 1 without a weight) is made on
// read. Chunk k of thread t at quad k * blockDim + t (a warp's 32 quads consecutive: LDS.128
// without conflicts). Why: the shared memory a CTA takes is L1 that its loads in flight no longer
// have; LayerNorm's typed 16-bit 4-chunk tile (one 512-thread CTA an SM) keeps ~92 KiB of L1 with
// it and kCompactScratch, against ~28 KiB with three fp32 sets (backward_build_built;
// docs/perf/norm.md#backward-and-l1). kOffset: the factor adds weight_offset (RMSNorm's Gemma
// offset; LayerNorm has none, and its build skips an add of 0 on every element of every row).
template <class T, int V, bool kOffset>
struct PackedWeightSlots {
  static_assert(V * sizeof(T) == 16, "a chunk is one quad");
  uint4* base;
  __device__ static PackedWeightSlots at(float* region) { return {reinterpret_cast<uint4*>(region) + threadIdx.x}; }
  __host__ __device__ static constexpr std::size_t floats(int cta_threads, int items) {
    return static_cast<std::size_t>(cta_threads) * items * 4;
  }
  // Chunk k of the weight at columns [c0, c0 + V) (zeros past the row). Without a weight and with
  // no offset to add: ones, past the row too (dy is 0 there), so that load needs no presence test.
  __device__ void store(const NormBwdParams& p, int k, int c0) const {
    Vec<T, V> w = zero_vec<T, V>();
    if (p.weight.data) load_chunk(static_cast<const T*>(p.weight.data), c0, p.n, w, from_float<T>(0.f));
    else if constexpr (!kOffset)
#pragma unroll
      for (int e = 0; e < V; ++e) w.v[e] = from_float<T>(1.f);
    base[k * blockDim.x] = reinterpret_cast<const uint4&>(w);
  }
  // With an offset, the weight's presence is tested once, outside the element loop: a select per
  // element lets ptxas schedule two of the next row's loads ~300 instructions later. Without one, no
  // test (store puts ones in the slots): a branch here has ptxas set the ones before every chunk's
  // branch. (docs/perf/norm.md#backward-and-l1)
  __device__ void load(const NormBwdParams& p, int k, float (&v)[V]) const {
    const uint4 raw = base[k * blockDim.x];
    const Vec<T, V>& w = reinterpret_cast<const Vec<T, V>&>(raw);
    if (!kOffset || p.weight.data) {
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = kOffset ? elem(w, e) + p.weight_offset : elem(w, e);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = 1.f;
    }
  }
};

template <int V>
__device__ __forceinline__ void zero(float (&v)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) v[e] = 0.f;
}

// The column sums dw, db of a thread's chunks over its rows, in registers: the fastest place,
// and shared memory left to L1, but kItems x V floats each beside the tiles' x and dy: the 2-chunk
// tile only (kSumsInSharedMemory). (docs/perf/norm.md#backward-design)
template <int kItems, int V, bool kLayerNorm>
struct RegisterSums {
  float dw[kItems][V], db[kItems][V];

  __device__ static constexpr std::size_t smem_sets(const NormBwdParams&) { return 0; }
  __device__ explicit RegisterSums(const NormBwdParams&, float*) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) zero(dw[k]), zero(db[k]);
  }
  // add(dw, db) adds a row's terms to chunk k's sums.
  template <class Add>
  __device__ void update(int k, Add add) {
    add(dw[k], db[k]);
  }
  __device__ void dw_chunk(int k, float (&v)[V]) const {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = dw[k][e];
  }
  __device__ void db_chunk(int k, float (&v)[V]) const {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = db[k][e];
  }
};

// The same sums in thread-private shared-memory slots, one slot set per requested sum
// (dw, db): read, added to and written back once per row and chunk, which frees the
// registers for more CTAs per SM. Each thread adds its rows in the same order as the
// register version: the same bits.
template <int kItems, int V, bool kLayerNorm>
struct SmemSums {
  using Slots = ThreadSlots<kItems, V>;
  // dw always (a kept but unrequested sum costs shared memory, not a per-chunk test), db for
  // LayerNorm: a run-time choice cost each chunk update register zeroing and predicates.
  Slots dw, db;

  __device__ static constexpr std::size_t smem_sets(const NormBwdParams&) { return kLayerNorm ? 2 : 1; }
  // `region`: the slot sets, one after the other (dw first).
  __device__ SmemSums(const NormBwdParams&, float* region) {
    const std::size_t set = Slots::floats(blockDim.x);
    dw = Slots::at(region);
    db = Slots::at(region + set);
    float z[V];
    zero(z);
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      dw.store(k, z);
      if (kLayerNorm) db.store(k, z);
    }
  }
  template <class Add>
  __device__ void update(int k, Add add) const {
    float a[V], b[V];
    dw.load(k, a);
    if (kLayerNorm) db.load(k, b);
    else zero(b);
    add(a, b);
    dw.store(k, a);
    if (kLayerNorm) db.store(k, b);
  }
  __device__ void dw_chunk(int k, float (&v)[V]) const { dw.load(k, v); }
  __device__ void db_chunk(int k, float (&v)[V]) const { db.load(k, v); }
};

// Writes one column sum's partial row of the row group (`read(k, v)`: chunk k's sums). Several
// rows per CTA: each team's sums go to its own row of `stage` (rows_per_cta x n floats at the
// start of the dynamic shared memory: the weight slots; with packed ones, kReadFirst, the dw
// slots too, which every thread reads before the first barrier; never the db slots), then each
// thread adds a column's teams in team order: two barriers for any number of teams, every thread
// at work. (docs/perf/norm.md#short-rows)
template <int kItems, int V, bool kFramed, bool kReadFirst, class Read>
__device__ __forceinline__ void emit_partial(const NormBwdParams& p, const RowTeam& team, float* partial,
                                             float* stage, int off, Read read) {
  float* out = partial + team.group() * p.n;
  // Two loops on purpose: one loop (or a shared lambda) with the store chosen inside cost the
  // small tiles registers and a spill (ptxas -v). The fp32 long-row tile is never several rows a CTA.
  if (kItems > kBackwardItems || team.rows_per_cta == 1) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if (c0 >= p.n) continue;
      float v[V];
      read(k, v);
      // Inline, not store_chunk_f: its out-of-line masked path (where an odd n's misaligned
      // partial row sends most chunks) is a call whose callee writes uniform registers (R2UR),
      // and ptxas can keep the partial row's pointer in one of them for the warp's other threads,
      // diverged onto the whole-chunk path, which then store through a clobbered pointer
      // (scripts/ur-hazard.py finds the pattern; docs/perf/norm.md#bwd-rejected). Once a kernel: no cost.
      if (chunk_inside(c0, V, p.n) && is_aligned(out + c0, 16)) {
        store_chunk_f(out, c0, p.n, v);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (c0 + e >= 0 && c0 + e < p.n) out[c0 + e] = v[e];
      }
    }
    return;
  }
  float held[kReadFirst ? kItems : 1][V];
  if constexpr (kReadFirst)
#pragma unroll
    for (int k = 0; k < kItems; ++k) read(k, held[k]);
  // Before `stage` is written: every thread's last reads of the weight slots under it (kReadFirst: of
  // the dw slots too, now in `held`) and, on db's call, the fold below of dw's stage.
  __syncthreads();
  float* mine = stage + static_cast<std::size_t>(team.row_in_cta) * p.n;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int c0 = chunk_col(k, team, V, off);
    float v[V];
    if constexpr (kReadFirst)
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = held[k][e];
    else
      read(k, v);
#pragma unroll
    for (int e = 0; e < V; ++e)
      if ((!kFramed || c0 + e >= 0) && c0 + e < p.n) mine[c0 + e] = v[e];
  }
  __syncthreads();  // every team's row of `stage` written
  for (int c = threadIdx.x; c < p.n; c += blockDim.x) {
    float s = stage[c];
    for (int t = 1; t < team.rows_per_cta; ++t) s += stage[static_cast<std::size_t>(t) * p.n + c];
    out[c] = s;
  }
}

// A row's operands in registers: x, dy (of dtype D: bf16 beside fp32 x in the kNarrowDy build)
// and the saved statistics.
template <class T, int kItems, class D = T>
struct RowTile {
  Vec<T, kVec<T>> x[kItems];
  Vec<D, kVec<T>> dy[kItems];
  float mean, rstd;
};

// Asks L2 for a later row's x and dy: this CTA's 1 / cluster_size share of each, issued by the
// first thread of each row team; nothing held, nothing to wait for. T: the storage dtype. The
// unpipelined long-row tile (no registers for a second row) prefetches row + 1; the pipelined
// kAhead build, which has row + 1 in registers, asks for row + 2. Not dresidual's row (slower in
// the long-row kDres build). The typed loop only (dy of dtype D). (docs/perf/norm.md#backward-design)
template <class T, class D>
__device__ __forceinline__ void prefetch_row_l2(const NormBwdParams& p, const RowTeam& team, long long row) {
  const bool go = team.lane == 0 && row < p.rows;
  const unsigned n = static_cast<unsigned>(p.n);
  prefetch_l2_part(row_of<T>(p.x, row), n * sizeof(T), team.cta_rank, team.cluster_size, go);
  prefetch_l2_part(row_of<D>(p.dy, row), n * sizeof(D), team.cta_rank, team.cluster_size, go);
}

// dresidual chunks the fp32 8-chunk tile's kDres build loads before the row's exchange (x and
// dy take 64 of its 128 registers); the rest are loaded where they are used. More early chunks
// spill. (docs/perf/norm.md#rmsnorm-backward-with-dresidual)
inline constexpr int kLongRowEarlyDres = 2;

// The tiles whose shared memory lies just below a configuration step take PairedReduceScratch
// (2.1 KiB) instead of ReduceScratch (8 KiB): the launch moves one step down and L1 up by 32 KiB
// (packed 4-chunk tile: 164 KiB configuration instead of 196; fp32 8-chunk tile: 196 instead of
// 228). A 4 KiB ReduceScratch would miss both steps by 1 KiB, hence the warp pairs.
// (docs/perf/norm.md#backward-and-l1)
template <int kItems, bool kPackedWeight>
inline constexpr bool kCompactScratch = kPackedWeight || kItems > kBackwardItems;
// The resident kernels' only static shared memory is their scratch: the CPU tests' fit check
// (backward_smem_bytes + kBackwardStaticSmem) holds for either.
static_assert(sizeof(ReduceScratch) <= kBackwardStaticSmem && sizeof(PairedReduceScratch) <= kBackwardStaticSmem,
              "kBackwardStaticSmem covers the resident kernels' scratch");

template <class T, int kItems, bool kLayerNorm, bool kTyped, bool kSmemSums, bool kPipelined,
          bool kPackedWeight = false, bool kAhead = false, bool kDres = false, bool kNarrowDy = false,
          bool kFramed = false, bool kTight = false>
__device__ __forceinline__ void resident_body(const NormBwdParams& p) {
  constexpr int V = kVec<T>;
  static_assert(kTyped || !kAhead, "the L2 prefetch build is the typed loop's");
  // kNarrowDy: bf16 dy beside fp32 rows, in the typed loop (the fused fp32 residual stream).
  static_assert(!kNarrowDy || (kTyped && sizeof(T) == 4), "bf16 dy beside the typed loop's fp32 rows");
  static_assert(!kFramed || (kTyped && !kPackedWeight && !kAhead && !kDres && !kNarrowDy), "the plain typed build in frames");
  using D = std::conditional_t<kNarrowDy, bf16, T>;
  using Slots = ThreadSlots<kItems, V>;
  // Weight slots: the register-sums tile (2 chunks) in StridedSlots, the smem-sums tiles the
  // quarter-warp-interleaved layout of their sums, the packed build its 16-bit quads.
  using FloatScale = std::conditional_t<kSmemSums, Slots, StridedSlots<kItems, V>>;
  using Packed = PackedWeightSlots<T, V, !kLayerNorm>;
  using Sums = std::conditional_t<kSmemSums, SmemSums<kItems, V, kLayerNorm>, RegisterSums<kItems, V, kLayerNorm>>;
  using Tile = RowTile<T, kItems, D>;
  extern __shared__ __align__(16) float dyn_smem[];
  const std::size_t set = Slots::floats(blockDim.x);
  const std::size_t weight_set = kPackedWeight ? Packed::floats(blockDim.x, kItems) : set;
  const FloatScale scale = FloatScale::at(dyn_smem);
  const Packed packed = Packed::at(dyn_smem);
  Sums sums(p, dyn_smem + weight_set);
  // chunk k's weight factor
  auto weight_factor = [&](int k, float (&w)[V]) {
    if constexpr (kPackedWeight) packed.load(p, k, w);
    else scale.load(k, w);
  };
  // The tiles whose slot sets sit just below a shared-memory configuration step take the
  // small scratch (kCompactScratch).
  using Scratch = std::conditional_t<kCompactScratch<kItems, kPackedWeight>, PairedReduceScratch, ReduceScratch>;
  __shared__ Scratch scratch;
  ReduceStateOf<Scratch> reduce{&scratch};
  const RowTeam team = start_team(p, reduce);
  cluster_reduce_ready(team);
  // kFramed: the rows in their frame (rows off the 16-byte grid whose operands share it: odd N,
  // sliced views): the team's first row's, which every row it takes shares, as the host makes
  // the grid's rows a multiple of the frame's period (backward_frame_groups). So the columns still
  // stay with their threads, and the sums with them.
  const long long first = RowLoop::row(team, 0);
  const int off = kFramed && first < p.rows ? frame_offset<T>(row_of<T>(p.x, first)) : 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if constexpr (kPackedWeight) {
      packed.store(p, k, chunk_col(k, team, V, off));
    } else {
      float w[V];
      load_scale(p, chunk_col(k, team, V, off), w);
      scale.store(k, w);
    }
  }

  // Issues the loads of a row's tile (zeros past the last row).
  auto load_tile = [&](long long row, Tile& t) {
    const bool valid = row < p.rows;
    // The rows' addresses once, kept there (keep_here: else ptxas recomputes them in each chunk's
    // branch); not on the framed tiles (fp32's 4-chunk one spills) nor the fp32 long-row tile
    // (slower there). (docs/perf/norm.md#backward-design)
    const T* x = row_of<T>(p.x, valid ? row : 0);
    const void* dy = kTyped || sizeof(T) == 2 ? row_of<D>(p.dy, valid ? row : 0) : row_of(p.dy, valid ? row : 0);
    if constexpr (!kFramed && kItems <= kBackwardItems) {
      keep_here(x);
      keep_here(dy);
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if (valid && c0 < p.n) {
        if constexpr (kTyped) {
          if constexpr (kFramed) {
            // The frame's end chunks inline (load_framed) where the tile's registers allow: fp32
            // and the 2-chunk tile everywhere; the 16-bit 4-chunk tile on its first chunk (the
            // head) and its last (the tail, wherever the plan puts it).
            const bool head = sizeof(T) == 4 || k == 0;
            const bool inline_ends = kItems <= 2 || sizeof(T) == 4 || k == 0 || k == kItems - 1;
            load_framed<Cache::stream>(x, c0, p.n, t.x[k], from_float<T>(0.f), head, inline_ends);
            load_framed<Cache::stream>(static_cast<const D*>(dy), c0, p.n, t.dy[k], from_float<D>(0.f), head,
                                       inline_ends);
          } else {
            load_whole<Cache::stream>(x + c0, t.x[k]);
            load_whole<Cache::stream>(static_cast<const D*>(dy) + c0, t.dy[k]);
          }
        } else {
          load_chunk<Cache::stream>(x, c0, p.n, t.x[k], from_float<T>(0.f));
          load_dy(p, dy, c0, t.dy[k]);
        }
      } else {
        t.x[k] = zero_vec<T, V>();
        t.dy[k] = zero_vec<D, V>();
      }
    }
    t.mean = (kLayerNorm && valid) ? p.mean[row] : 0.f;
    t.rstd = valid ? p.rstd[row] : 0.f;
  };
  // The row's reduction, then dx and the column sums' terms.
  auto finish_row = [&](long long row, const Tile& t) {
    const bool valid = row < p.rows;
    Float2 part{0.f, 0.f};
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      float w[V];
      weight_factor(k, w);
      accumulate_sums<kFoldedRows<kLayerNorm, kTyped, T>>(w, t.x[k], t.dy[k], t.mean, part);
    }
    if constexpr (kFoldedRows<kLayerNorm, kTyped, T>) part.b = fmaf(-t.mean, part.a, part.b);
    part.b *= t.rstd;
    // kDres: the row's dresidual chunks, issued before the exchange so that they arrive during it.
    // The fp32 long-row tile has registers for two of its eight next to x and dy; it loads the
    // others where they are used (kLongRowEarlyDres).
    constexpr int kEarly = !kDres ? 0 : kItems <= kBackwardItems ? kItems : kLongRowEarlyDres;
    Vec<T, V> dres[kEarly > 0 ? kEarly : 1];
    if constexpr (kEarly > 0) {
      const T* dr = row_of<T>(p.dresidual, valid ? row : 0);
#pragma unroll
      for (int k = 0; k < kEarly; ++k) {
        const int c0 = chunk_col(k, team, V, off);
        if (valid && c0 < p.n) load_whole<Cache::stream>(dr + c0, dres[k]);
        else dres[k] = zero_vec<T, V>();
      }
    }
    const Float2 m = reduce_sums<kLayerNorm>(part, team, reduce, p.n);
    // dx's row: the typed loop knows its dtype (no run-time element size a row).
    void* dx_row = nullptr;
    if (valid) {
      if constexpr (kTyped) dx_row = mutable_row_of<T>(p.dx, row);
      else dx_row = mutable_row_of(p.dx, row);
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int c0 = chunk_col(k, team, V, off);
      if (!valid || c0 >= p.n) continue;
      float w[V];
      weight_factor(k, w);
      Vec<T, V> late;
      if (kDres && k >= kEarly) load_whole<Cache::stream>(row_of<T>(p.dresidual, row) + c0, late);
      sums.update(k, [&](float (&dw)[V], float (&db)[V]) {
        chunk_gradients<kTyped, kLayerNorm, kDres, kFramed, kTight>(p, row, dx_row, c0, w, t.x[k], t.dy[k], t.mean, t.rstd, m.a, m.b,
                                                   dw, db, k < kEarly ? dres[k < kEarly ? k : 0] : late);
      });
    }
  };

  // 16-bit framed rows lift the first chunk's head word at use (lift_frame_head).
  auto lift = [&](Tile& t) {
    if constexpr (kFramed) {
      const int c0 = chunk_col(0, team, V, off);
      lift_frame_head(t.x[0], c0);
      lift_frame_head(t.dy[0], c0);
    }
  };
  const RowLoop loop(team, p.rows);
  if constexpr (kPipelined) {
    // The next row's loads are in flight while this row is reduced (across the cluster) and
    // written: a CTA's memory traffic does not stop for its own exchange and stores.
    Tile cur;
    load_tile(RowLoop::row(team, 0), cur);
    for (long long it = 0; it < loop.iters; ++it) {
      Tile next;
      load_tile(RowLoop::row(team, it + 1), next);
      // One thread of the row's team in each CTA asks (prefetch_row_l2): the others skip its
      // address arithmetic and the uniform-register loop ptxas builds around the prefetch (~40
      // instructions a row).
      if constexpr (kAhead)
        if (team.lane == 0) prefetch_row_l2<T, D>(p, team, RowLoop::row(team, it + 2));
      lift(cur);
      finish_row(RowLoop::row(team, it), cur);
      cur = next;
    }
  } else {
    for (long long it = 0; it < loop.iters; ++it) {
      Tile t;
      load_tile(RowLoop::row(team, it), t);
      // The long-row tile has no registers for the next row's tile: its L2 prefetch instead.
      // (Thread 0 alone computes its address: in all threads it makes this tile spill.)
      if constexpr (kTyped && kItems > kBackwardItems)
        if (team.lane == 0) prefetch_row_l2<T, D>(p, team, RowLoop::row(team, it + 1));
      lift(t);
      finish_row(RowLoop::row(team, it), t);
    }
  }

  // One partial row per row group.
  if (p.dw_partial)
    emit_partial<kItems, V, kFramed, kPackedWeight>(p, team, p.dw_partial, dyn_smem, off, [&](int k, float (&v)[V]) { sums.dw_chunk(k, v); });
  if constexpr (kLayerNorm)
    if (p.db_partial)
      emit_partial<kItems, V, kFramed, kPackedWeight>(p, team, p.db_partial, dyn_smem, off,
                              [&](int k, float (&v)[V]) { sums.db_chunk(k, v); });
}

// The tiles whose column sums sit in shared memory (SmemSums); the 2-chunk tile keeps them in
// registers (RegisterSums). One rule for the kernels and the launch's shared-memory size.
template <int kItems>
inline constexpr bool kSumsInSharedMemory = backward_sums_in_smem(kItems);

// Two kernels, as the register bound is an attribute. The 2- and 4-chunk tiles run pipelined
// under 128 registers (16-bit 2-chunk tiles under 96 where backward_tile_regs says so). The 4-chunk
// tile keeps its column sums in shared memory, to leave registers for the second row's tile; the
// 2-chunk tile keeps them in registers: no slot traffic, and shared memory left to L1. The fp32
// 8-chunk tile keeps them in shared memory, unpipelined (two 64-register tiles do not fit).
// (docs/perf/norm.md#backward-design, docs/perf/norm.md#register-partitions)
// (The bound is spelled as an expression of the template: nvcc rejects a literal beside
// __launch_bounds__.)
template <class T, int kItems, bool kLayerNorm, bool kTyped, bool kDres = false, bool kNarrowDy = false>
__global__ void __launch_bounds__(kMaxRowThreads) __maxnreg__((kItems > kBackwardItems ? kBackwardTileRegs : 0))
    norm_bwd_resident_smem_sums(const __grid_constant__ NormBwdParams p) {
  static_assert(kItems > kBackwardItems && kSumsInSharedMemory<kItems>, "the fp32 long-row tile only");
  resident_body<T, kItems, kLayerNorm, kTyped, true, false, false, false, kDres, kNarrowDy>(p);
}

// kFramed: rows off the 16-byte grid in their frame (the plain typed build only), in kernels of
// their own: the frame's edge tests and out-of-line masked ends, inside the aligned rows' kernels,
// cost those up to 21 % (docs/perf/norm.md#bwd-rejected).
// kTight: LayerNorm's 16-bit 2-chunk tile at 96 registers (backward_tight_layer_norm;
// docs/perf/norm.md#register-partitions).
template <class T, int kItems, bool kLayerNorm, bool kTyped, bool kPackedWeight = false, bool kAhead = false,
          bool kDres = false, bool kNarrowDy = false, bool kFramed = false, bool kTight = false>
__global__ void __launch_bounds__(kMaxRowThreads)
__maxnreg__((kItems > 0 ? backward_tile_regs(kItems, kLayerNorm, sizeof(T), kTight) : 0))  // as an expression (above)
    norm_bwd_resident_pipelined(const __grid_constant__ NormBwdParams p) {
  resident_body<T, kItems, kLayerNorm, kTyped, kSumsInSharedMemory<kItems>, true, kPackedWeight, kAhead, kDres,
                kNarrowDy, kFramed, kTight>(p);
}

// Rows too long to keep x and dy on chip: two passes over each row, and the column sums
// read-modify-written in the group's own partial row (each column owned by one thread, so
// still without atomics and deterministic).
template <class T, bool kLayerNorm>
__global__ void __launch_bounds__(kMaxRowThreads) norm_bwd_streaming(const __grid_constant__ NormBwdParams p) {
  constexpr int V = kVec<T>;
  __shared__ ReduceScratch scratch;
  ReduceState reduce{&scratch};
  const RowTeam team = start_team(p, reduce);
  cluster_reduce_ready(team);
  const int chunks = ceil_div(p.n, V);
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
      load_dy(p, sizeof(T) == 2 ? row_of<T>(p.dy, row) : row_of(p.dy, row), c0, dy);
    };
    Float2 part{0.f, 0.f};
    for (int j = team.rank(); valid && j < chunks; j += team.size()) {
      Vec<T, V> x, dy;
      float w[V];
      load(j * V, x, dy);
      load_scale(p, j * V, w);
      accumulate_sums<false>(w, x, dy, mean, part);
    }
    part.b *= rstd;
    const Float2 m = reduce_sums<kLayerNorm>(part, team, reduce, p.n);
    for (int j = team.rank(); valid && j < chunks; j += team.size()) {
      Vec<T, V> x, dy;
      float w[V];
      load(j * V, x, dy);
      load_scale(p, j * V, w);
      float dw[V], db[V];
#pragma unroll
      for (int e = 0; e < V; ++e) dw[e] = db[e] = 0.f;
      if (it > 0 && dw_row) load_chunk_f(dw_row, j * V, p.n, dw, 0.f);
      if (it > 0 && db_row) load_chunk_f(db_row, j * V, p.n, db, 0.f);
      chunk_gradients<false, kLayerNorm, false>(p, row, mutable_row_of(p.dx, row), j * V, w, x, dy, mean, rstd, m.a,
                                                m.b, dw, db, x);
      if (dw_row) store_chunk_f(dw_row, j * V, p.n, dw);
      if (db_row) store_chunk_f(db_row, j * V, p.n, db);
    }
  }
}

// out[c] = sum over g of partial[g][c]: a CTA of 512 threads takes blockDim.x columns (32, or 8
// for rows under kNarrowColumnSumN, whose few column blocks would leave most SMs idle), its
// blockDim.y slices each the groups g = slice mod slices in increasing order; a warp's slices fold
// by shuffles, then the 16 warps' sums in order: the same bits every run. Eight partial rows a
// thread are loaded before they are added (in the same order): a thread's loads in flight, not the
// adds, bound this kernel (the partials, just written, come from L2). LayerNorm's dw and db are
// summed by one launch (blockIdx.y picks the sum): a launch costs ~4 us of host time, more than a
// small-shape backward. (docs/perf/norm.md#backward-design)
struct ColumnSums {
  const float* partial[2];
  void* out[2];
  DType out_dtype[2];
};
constexpr int kColumnSumThreads = 512, kNarrowColumnSumN = 2048;

__global__ void __launch_bounds__(kColumnSumThreads) column_sum_kernel(const __grid_constant__ ColumnSums sums,
                                                                       long long groups, int n) {
  const float* partial = sums.partial[blockIdx.y];
  void* out = sums.out[blockIdx.y];
  const DType out_dtype = sums.out_dtype[blockIdx.y];
  constexpr int kBatch = 8, kWarps = kColumnSumThreads / 32;
  __shared__ float warp_sum[kWarps][32];
  const int slices = blockDim.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.f;
  if (c < n && blockDim.x < 32) {
    // Narrow CTAs (a few rows a thread): the last batch too, its rows past the groups adding zeros.
    for (long long g = threadIdx.y; g < groups; g += kBatch * slices) {
      float v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const long long r = g + i * slices;
        v[i] = r < groups ? load_word<Cache::stream>(partial + r * n + c) : 0.f;
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) s += v[i];
    }
  } else if (c < n) {
    long long g = threadIdx.y;
    for (; g + (kBatch - 1) * slices < groups; g += kBatch * slices) {
      float v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) v[i] = load_word<Cache::stream>(partial + (g + i * slices) * n + c);
#pragma unroll
      for (int i = 0; i < kBatch; ++i) s += v[i];
    }
    for (; g < groups; g += slices) s += partial[g * n + c];
  }
  for (int o = blockDim.x; o < 32; o *= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  const int t = threadIdx.y * blockDim.x + threadIdx.x, warp = t / 32, lane = t % 32;
  warp_sum[warp][lane] = s;
  __syncthreads();
  if (t < static_cast<int>(blockDim.x) && c < n) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += warp_sum[w][lane];
    if (out_dtype == DType::f32) static_cast<float*>(out)[c] = total;
    else if (out_dtype == DType::f16) static_cast<half*>(out)[c] = from_float<half>(total);
    else static_cast<bf16*>(out)[c] = from_float<bf16>(total);
  }
}

// ---- host: which kernel, how much shared memory -------------------------------------------

using BwdKernel = void (*)(NormBwdParams);
struct BwdLaunch {
  BwdKernel kernel = nullptr;
  std::size_t smem = 0;  // dynamic shared memory, bytes
};

// Largest resident tile instantiated for storage T (the backward keeps x and dy in
// registers, so its tiles are smaller than the forward's): kBackwardItems, and the long-row
// tile for fp32 (norm_params.h).
template <class T>
inline constexpr int kMaxBackwardItems = sizeof(T) == 4 ? kBackwardLongRowItems : kBackwardItems;

// The kernel of a build (backward_build_built's set, instantiated by walking every combination
// of its flags at compile time): the pipelined 2- and 4-chunk tiles, the fp32 long-row tile.
template <class T, int kItems, bool kLayerNorm, int kFlags>
BwdKernel kernel_if(const BwdBuild& want) {
  constexpr BwdBuild b = backward_build_of_flags(kItems, kFlags);
  if constexpr (backward_build_built(b, sizeof(T), kLayerNorm)) {
    if (b == want) {
      if constexpr (kItems == kBackwardLongRowItems)
        return norm_bwd_resident_smem_sums<T, kItems, kLayerNorm, b.typed, b.dres, b.narrow_dy>;
      else
        return norm_bwd_resident_pipelined<T, kItems, kLayerNorm, b.typed, b.packed, b.ahead, b.dres, b.narrow_dy,
                                           b.framed, b.tight>;
    }
  }
  return nullptr;
}
template <class T, int kItems, bool kLayerNorm, int... kFlags>
BwdKernel find_kernel(const BwdBuild& want, std::integer_sequence<int, kFlags...>) {
  BwdKernel k = nullptr;
  ((k = k ? k : kernel_if<T, kItems, kLayerNorm, kFlags>(want)), ...);
  return k;
}

template <class T, int kItems>
BwdLaunch resident_launch(bool layer_norm, bool typed, const NormBwdParams& p, const RowConfig& cfg) {
  BwdLaunch l;
  const bool packed = backward_packs_weight(backward_weight_slots(dtype_of<T>, p.weight.data != nullptr, p.weight.dtype),
                                            layer_norm, typed, p.framed, sizeof(T), kItems);
  const bool fast_hbm = current_device("norm backward").hbm_per_sm() >= kAheadHbmPerSm;
  const bool ahead = typed && !p.framed && variant_enabled(Variant::bwd_l2_prefetch) &&
                     backward_l2_prefetch(cfg, layer_norm, sizeof(T), fast_hbm);
  BwdBuildAsk ask;
  ask.typed = typed;
  ask.framed = p.framed;
  ask.packed = packed;
  ask.ahead = ahead;
  ask.dres = typed && p.dresidual.data != nullptr;  // only where backward_typed_dresidual allowed it
  ask.narrow_dy = typed && p.dy.dtype != dtype_of<T>;  // only where the plan allowed it (norm.cpp)
  ask.tight = backward_tight_layer_norm(cfg, sizeof(T), p.framed);
  const BwdBuild build = backward_build(kItems, layer_norm, sizeof(T), ask);
  constexpr auto flags = std::make_integer_sequence<int, kBwdBuildFlagSets>{};
  l.kernel = layer_norm ? find_kernel<T, kItems, true>(build, flags) : find_kernel<T, kItems, false>(build, flags);
  if (!l.kernel) throw Error("norm backward: internal: no build of the " + std::to_string(kItems) + "-chunk tile here");
  // Mirrors the kernel: SmemSums::smem_sets where the sums sit in shared memory, and the column
  // region of emit_partial.
  const bool sums = p.dw_partial || (layer_norm && p.db_partial);
  l.smem = backward_smem_bytes(cfg, layer_norm, sizeof(T), packed, sums, p.n);
  return l;
}

// Dynamic shared memory `kernel` can opt in to: the device's opt-in limit less its static
// shared memory. Cached per kernel.
inline std::size_t max_dynamic_smem(const char* op, BwdKernel kernel) {
  static std::mutex mutex;
  static std::map<BwdKernel, std::size_t> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(kernel);
  if (it != cache.end()) return it->second;
  int device = 0, optin = 0;
  TACHYON_CUDA_CHECK(op, cudaGetDevice(&device));
  TACHYON_CUDA_CHECK(op, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attr{};
  TACHYON_CUDA_CHECK(op, cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel)));
  const std::size_t bytes = static_cast<std::size_t>(optin) - attr.sharedSizeBytes;
  cache.emplace(kernel, bytes);
  return bytes;
}

inline void require_smem_fits(const char* op, const BwdLaunch& l) {
  if (l.smem > max_dynamic_smem(op, l.kernel))
    throw Error(std::string(op) + ": internal: " + std::to_string(l.smem) +
                " bytes of shared memory for the backward's column sums");
}

// The resident kernel for a tile (pipelined tiles: at most 3 slot sets of 4 chunks x 16 bytes
// x 512 threads, 192 KiB).
template <class T, int kItems>
BwdLaunch choose_resident(const char* op, bool layer_norm, bool typed, const NormBwdParams& p, const RowConfig& cfg) {
  if (kItems > kMaxBackwardItems<T>)
    throw Error(std::string(op) + ": internal: backward tile of " + std::to_string(kItems) + " items");
  const BwdLaunch l = resident_launch<T, kItems>(layer_norm, typed, p, cfg);
  require_smem_fits(op, l);
  return l;
}

// The kernel for a tile: streaming for 0 items, else choose_resident.
template <class T, int kItems>
BwdLaunch backward_launch(const char* op, bool layer_norm, bool typed, const NormBwdParams& p, const RowConfig& cfg) {
  if constexpr (kItems == 0) {
    return {layer_norm ? norm_bwd_streaming<T, true> : norm_bwd_streaming<T, false>, 0};
  } else {
    return resident_or_throw<kItems, kMaxBackwardItems<T>>(op, "backward", [&](auto items) {
      return choose_resident<T, decltype(items)::value>(op, layer_norm, typed, p, cfg);
    });
  }
}

}  // namespace

void launch_norm_backward(const char* op, bool layer_norm, bool typed, DType storage, const NormBwdParams& p,
                          const RowConfig& cfg, long long groups, void* dw, DType dw_dtype, void* db,
                          DType db_dtype, cudaStream_t stream) {
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      const BwdLaunch l = backward_launch<T, I>(op, layer_norm, typed, p, cfg);
      launch_rows(op, l.kernel, cfg, groups, l.smem, stream, p);
    });
  });
  ColumnSums sums{};
  unsigned count = 0;
  if (dw) sums.partial[count] = p.dw_partial, sums.out[count] = dw, sums.out_dtype[count++] = dw_dtype;
  if (db) sums.partial[count] = p.db_partial, sums.out[count] = db, sums.out_dtype[count++] = db_dtype;
  if (count == 0) return;
  const int columns = p.n < kNarrowColumnSumN ? 8 : 32;
  const dim3 block(columns, kColumnSumThreads / columns);
  const dim3 grid(static_cast<unsigned>(ceil_div(p.n, columns)), count);
  column_sum_kernel<<<grid, block, 0, stream>>>(sums, groups, p.n);
  TACHYON_CHECK_LAUNCH(op);
}

long long norm_backward_groups(const char* op, bool layer_norm, bool typed, DType storage, const RowConfig& cfg,
                               const NormBwdParams& p, long long total, int sm_count) {
  long long groups = 0;
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_items(op, cfg.items, [&](auto items) {
      constexpr int I = decltype(items)::value;
      const BwdLaunch l = backward_launch<T, I>(op, layer_norm, typed, p, cfg);
      groups = persistent_groups(op, reinterpret_cast<const void*>(l.kernel), cfg, l.smem, total, sm_count);
    });
  });
  return groups;
}

}  // namespace tachyon::detail
