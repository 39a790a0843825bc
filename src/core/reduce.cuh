#pragma once
// The reduction ladder, written once for every reduction kernel (norms, softmax,
// cross-entropy): thread-local values -> warp (butterfly shuffles) -> the row's warps in
// this CTA and the row's CTAs in the cluster (one exchange through shared / distributed
// shared memory, one barrier) -> every thread of the row holds the result.
//
// Combine operations are small structs: `identity()` and `operator()(a, b)`, over float or
// over a pair (MaxSum for online softmax, Sum2 for two sums at once).
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "core/cluster.cuh"
#include "core/named_barrier.cuh"

namespace tachyon::detail {

// ---- values and combine operations ---------------------------------------------------------

struct Sum {
  __device__ float identity() const { return 0.f; }
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Ignores NaN by design (fmaxf): callers propagate NaN through the sum that follows.
struct Max {
  __device__ float identity() const { return -INFINITY; }
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

struct Float2 {
  float a, b;
};

struct Sum2 {
  __device__ Float2 identity() const { return {0.f, 0.f}; }
  __device__ Float2 operator()(Float2 x, Float2 y) const { return {x.a + y.a, x.b + y.b}; }
};

// Online softmax statistics: a = running max m, b = sum of exp(v - m). Combining rescales
// the smaller side; -inf maxima (empty or fully masked parts) contribute nothing.
struct MaxSumExp {
  __device__ Float2 identity() const { return {-INFINITY, 0.f}; }
  __device__ Float2 operator()(Float2 x, Float2 y) const {
    float m = fmaxf(x.a, y.a);
    if (m == -INFINITY) return {m, x.b + y.b};  // both empty (or NaN-free -inf rows)
    return {m, x.b * __expf(x.a - m) + y.b * __expf(y.a - m)};
  }
};

// MaxSumExp whose butterflies in row_reduce run as two (max_sum_exp_butterfly), and whose
// slots, a power of two of them, fold in log2(slots) levels: the caller picks it where it
// measured ahead (the 16-bit cross-entropy loss, ~3 % at 4-8K columns). The fp32 kernels keep
// the pairwise combine: with the split, the 8-chunk fp32 kernel spilled (docs/perf.md,
// "Softmax and cross-entropy").
struct MaxSumExpSplit : MaxSumExp {};

// A warp's share of a row's moments, exchanged as one 16-byte value (one st.async):
// element count, sum, and M2 = sum of squared deviations from the warp's own mean.
struct alignas(16) WarpMoments {
  float n, sum, m2, pad;
};

__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

__device__ __forceinline__ Float2 shfl_xor(Float2 v, int mask) {
  return {__shfl_xor_sync(0xffffffffu, v.a, mask), __shfl_xor_sync(0xffffffffu, v.b, mask)};
}

// ---- who works on a row ------------------------------------------------------------------

// The threads that cooperate on one row: `threads_per_row` consecutive threads of a CTA
// (1..32 as a power of two, or a multiple of 32) in each of `cluster_size` CTAs.
struct RowTeam {
  int threads_per_row;
  int rows_per_cta;
  int cluster_size;
  int lane;        // index within the row's threads of this CTA
  int row_in_cta;  // which of the CTA's rows
  int cta_rank;    // rank of this CTA in its cluster

  __device__ static RowTeam make(int threads_per_row, int rows_per_cta, int cluster_size) {
    RowTeam t;
    t.threads_per_row = threads_per_row;
    t.rows_per_cta = rows_per_cta;
    t.cluster_size = cluster_size;
    t.lane = static_cast<int>(threadIdx.x) % threads_per_row;
    t.row_in_cta = static_cast<int>(threadIdx.x) / threads_per_row;
    t.cta_rank = cluster_size > 1 ? cluster_rank() : 0;
    return t;
  }
  // Threads of the whole team (all CTAs of the cluster) and this thread's index in it.
  __device__ int size() const { return threads_per_row * cluster_size; }
  __device__ int rank() const { return cta_rank * threads_per_row + lane; }
  // The row-group index of this CTA's cluster: rows [group * rows_per_cta, +rows_per_cta).
  __device__ long long group() const { return static_cast<long long>(blockIdx.x) / cluster_size; }
  __device__ long long groups() const { return static_cast<long long>(gridDim.x) / cluster_size; }
  // The row of a launch with one row group per CTA / cluster (persistent kernels: RowLoop), its
  // group the hardware's cluster index: no 64-bit division (~100 instructions with its slow
  // path). group() keeps the division: in the persistent norm backward the cluster index made
  // its 80-register tile spill (docs/perf.md#registers-decide-the-layout).
  __device__ long long row() const {
    return static_cast<long long>(cluster_id()) * rows_per_cta + row_in_cta;
  }
  __device__ int warps_per_row() const { return threads_per_row >= 32 ? threads_per_row / 32 : 1; }
};

// Shared-memory exchange buffers. Each reduction uses the next of two buffers in turn: a
// reduction completes only once every CTA has sent its next partial, which it does after
// reading the buffer before, so two suffice for any number of reductions in a row
// (LayerNorm's two, a persistent loop's many). "After" without a fence: every warp of the row
// sends a slot, and a warp's send is issued after the fold that consumes its reads of the
// buffer before (in-order issue: the adds wait for the loads' values), so no peer can write
// a buffer again while a warp of this CTA still reads it (cluster.cuh, exchange).
// Sized for 32 warps x 16 CTAs of 8-byte values (or 16 warps x 16 CTAs of 16-byte
// WarpMoments: kMaxRowThreads is 512); one mbarrier per buffer for the cluster exchange.
struct ReduceScratch {
  static constexpr bool kPairedWarps = false;
  static constexpr int kSlots = 32 * 16;
  static constexpr int kBufferBytes = kSlots * static_cast<int>(sizeof(Float2));
  alignas(16) Float2 buf[2][kSlots];
  std::uint64_t bar[2];
};

// A quarter of ReduceScratch (2.1 KiB), for kernels whose dynamic shared memory sits just
// below a shared-memory configuration step, where every KiB the CTA takes is L1 its loads in
// flight no longer have (docs/perf.md, "The norm backward and L1"). Across a cluster the
// row's warps post in pairs: the even warp hands its value to its odd partner through `pair`
// and a named barrier of the two warps, and the partner sends the pair's combined value, so
// a buffer holds 8 pairs x 16 CTAs of 8-byte values. One CTA: every warp posts, as in
// ReduceScratch (16 warps' slots). `pair` has two halves used in turn, like the buffers, and
// both warps wait at the barrier: the even warp writes a half again only after the barrier of
// the reduction in between, which its partner reaches after reading it (with one half and
// the partner only arriving, the order would hold through the cluster exchange, but not in a
// form compute-sanitizer's racecheck follows).
struct PairedReduceScratch {
  static constexpr bool kPairedWarps = true;
  static constexpr int kSlots = 8 * 16;
  static constexpr int kBufferBytes = kSlots * static_cast<int>(sizeof(Float2));
  alignas(16) Float2 buf[2][kSlots];
  Float2 pair[2][8];
  std::uint64_t bar[2];
};

template <class S = ReduceScratch>
struct ReduceStateOf {
  S* scratch;
  int next = 0;
  unsigned phase = 0;  // bit b: parity of buffer b's barrier
};
using ReduceState = ReduceStateOf<>;

// Start of every kernel that reduces across a cluster: barriers initialised and published,
// then a relaxed arrive; cluster_reduce_ready (the matching wait) must come before the first
// reduction — kernels put their first loads in between.
template <class S>
__device__ __forceinline__ void cluster_reduce_prologue(const RowTeam& team, ReduceStateOf<S>& state) {
  if (team.cluster_size > 1) {
    if (threadIdx.x == 0) {  // one arrival a phase: the local arming (exchange_slots)
      for (int i = 0; i < 2; ++i) mbar_init(state.scratch->bar + i, 1);
      mbar_init_fence();
    }
    cluster_arrive_relaxed();
  }
}
__device__ __forceinline__ void cluster_reduce_ready(const RowTeam& team) {
  if (team.cluster_size > 1) cluster_wait();
}

// ---- the start of a row kernel -----------------------------------------------------------
// P: a row kernel's parameters (threads_per_row, rows_per_cta, cluster_size, rows).

template <class P>
__device__ __forceinline__ RowTeam row_team(const P& p) {
  return RowTeam::make(p.threads_per_row, p.rows_per_cta, p.cluster_size);
}

// The team, with the cluster prologue done on `reduce`. The persistent kernels start with it
// (`ReduceState reduce{&scratch}; const RowTeam team = start_team(p, reduce);`): team and
// state stay separate locals there, as in one struct (RowStart) ptxas gave their row loops
// other register counts (-19 to +7, norm_bwd).
template <class P, class S>
__device__ __forceinline__ RowTeam start_team(const P& p, ReduceStateOf<S>& reduce) {
  const RowTeam team = row_team(p);
  cluster_reduce_prologue(team, reduce);
  return team;
}

// How a kernel of one row group per CTA / cluster starts:
//   __shared__ ReduceScratch scratch;
//   auto [team, reduce, row, valid] = start_row(p, scratch);
// The kernel declares the scratch so that its shared memory stays in sight. `valid` is false
// past the last row, where the final group overhangs: such threads still join every reduction.
struct RowStart {
  RowTeam team;
  ReduceState reduce;
  long long row;
  bool valid;
};

template <class P>
__device__ __forceinline__ RowStart start_row(const P& p, ReduceScratch& scratch) {
  ReduceState reduce{&scratch};
  const RowTeam team = start_team(p, reduce);
  const long long row = team.row();
  return {team, reduce, row, row < p.rows};
}

// Butterfly over the row's threads within a warp (all 32 lanes, or threads_per_row < 32).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op, const RowTeam& team) {
  const int width = team.threads_per_row < 32 ? team.threads_per_row : 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width) v = op(v, shfl_xor(v, o));
  return v;
}

// True when a warp's result is already the row's: the row lies within one warp.
__device__ __forceinline__ bool row_in_warp(const RowTeam& team) {
  return team.threads_per_row <= 32 && team.cluster_size == 1;
}

// The one exchange of the ladder: every warp of the row (in every CTA of the cluster) posts
// its value v to a slot; returns the row's slots, readable by every thread of the row once
// this returns. All threads of the CTA (and cluster) call it the same number of times.
template <class T>
__device__ __forceinline__ const T* exchange_slots(const T& v, const RowTeam& team, ReduceState& state) {
  // One slot per (CTA, warp) of the row, in every CTA of the cluster.
  const int wpr = team.warps_per_row();
  const int slots = wpr * team.cluster_size;
  static_assert(16 * 16 * sizeof(T) <= ReduceScratch::kBufferBytes, "a buffer holds 16 warps x 16 CTAs of T");
  T* row_buf = reinterpret_cast<T*>(state.scratch->buf[state.next]) + team.row_in_cta * slots;
  const int lane32 = static_cast<int>(threadIdx.x) & 31;
  const int slot = team.cta_rank * wpr + team.lane / 32;
  state.next ^= 1;
  if (team.cluster_size == 1) {
    if (lane32 == 0) row_buf[slot] = v;
    __syncthreads();
  } else {
    // One row per CTA in a cluster. Thread 0 arms this CTA's barrier for the slots it will
    // receive; lane r of every warp sends the warp's value to CTA r (one st.async each).
    const int b = state.next ^ 1;  // the buffer row_buf points into
    std::uint64_t* bar = &state.scratch->bar[b];
    if (threadIdx.x == 0) mbar_arrive_expect_tx_relaxed(bar, static_cast<unsigned>(slots * sizeof(T)));
    if (lane32 < team.cluster_size) exchange_send(row_buf + slot, bar, lane32, v);
    mbar_wait(bar, (state.phase >> b) & 1u);
    state.phase ^= 1u << b;
  }
  return row_buf;
}

// The slots of exchange_paired_slots: one per warp in one CTA, one per warp pair (and odd last
// warp) of every CTA across a cluster.
__device__ __forceinline__ int paired_slot_count(const RowTeam& team) {
  const int wpr = team.warps_per_row();
  return team.cluster_size == 1 ? wpr : (wpr + 1) / 2 * team.cluster_size;
}

// exchange_slots on PairedReduceScratch: across a cluster the even warp of each pair hands v
// to its odd partner (pair slot, named barrier 1 + pair of the two warps), which posts
// op(even's v, its own v); the last of an odd number of warps posts alone. In one CTA every
// warp posts, as in exchange_slots. Kept apart from exchange_slots, whose code the other row
// kernels were measured with (a shared body changed their SASS).
template <class T, class Op>
__device__ __forceinline__ const T* exchange_paired_slots(const T& v, Op op, const RowTeam& team,
                                                          ReduceStateOf<PairedReduceScratch>& state) {
  static_assert(8 * 16 * sizeof(T) <= PairedReduceScratch::kBufferBytes, "a buffer holds 8 pairs x 16 CTAs of T");
  static_assert(sizeof(T) <= sizeof(Float2), "a pair slot holds T");
  const int wpr = team.warps_per_row();
  const int slots = paired_slot_count(team);
  T* row_buf = reinterpret_cast<T*>(state.scratch->buf[state.next]) + team.row_in_cta * slots;
  const int lane32 = static_cast<int>(threadIdx.x) & 31;
  const int warp = team.lane / 32;
  state.next ^= 1;
  if (team.cluster_size == 1) {
    if (lane32 == 0) row_buf[warp] = v;
    __syncthreads();
    return row_buf;
  }
  const int b = state.next ^ 1;  // the buffer row_buf points into, and the pair slots' half
  std::uint64_t* bar = &state.scratch->bar[b];
  if (threadIdx.x == 0) mbar_arrive_expect_tx_relaxed(bar, static_cast<unsigned>(slots * sizeof(T)));
  const int pair = warp / 2;
  const bool odd = warp & 1;
  const bool alone = !odd && warp + 1 == wpr;
  T* pair_slot = reinterpret_cast<T*>(&state.scratch->pair[b][pair]);
  if (!odd && lane32 == 0) *pair_slot = v;
  named_barrier_sync(1 + pair, alone ? 32 : 64);
  if (odd || alone) {
    const T sent = odd ? op(*pair_slot, v) : v;
    const int slot = team.cta_rank * ((wpr + 1) / 2) + pair;
    if (lane32 < team.cluster_size) exchange_send(row_buf + slot, bar, lane32, sent);
  }
  mbar_wait(bar, (state.phase >> b) & 1u);
  state.phase ^= 1u << b;
  return row_buf;
}

// MaxSumExp over the first `width` lanes (a power of two up to 32) of a warp as two
// butterflies: the maximum, then the sum of each lane's sum rescaled to it once. That is one
// exponential a lane in place of two a level, about 35 instructions fewer a butterfly; the
// bits differ from the pairwise combine, but not between runs. NaN and infinities come out as
// from the pairwise combine: a NaN lane's rescaled sum is NaN, and so is inf - inf. The other
// ops keep their loop spelled out at each call: through a shared helper ptxas moved the
// registers of some norm kernels.
__device__ __forceinline__ Float2 max_sum_exp_butterfly(Float2 v, int width) {
  float m = v.a;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width) m = fmaxf(m, shfl_xor(m, o));
  float s = m == -INFINITY ? v.b : v.b * __expf(v.a - m);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width) s += shfl_xor(s, o);
  return {m, s};
}

// Folds the row's slots: lane i takes slots i, i + 32, ... (through `get`), then a butterfly
// over the warp. kSmallFold, up to 32 slots: with w the slot count rounded up to a power of
// two, lane i takes slot i mod w (the identity past the last), so each group of w lanes holds
// them all and the butterfly needs log2(w) levels (8 warps: one shared load and 3 levels, not a
// slot loop and 5). Only in row_reduce's unpaired exchange, where it measured ahead (one-CTA
// rows: LayerNorm backward, softmax at 4096); in the paired exchange and row_moments it cost
// registers and spills (docs/perf.md#registers-decide-the-layout). kRolledSlots: see row_reduce.
template <bool kRolledSlots, bool kSmallFold = false, class Op, class Get>
__device__ __forceinline__ auto fold_slots(int slots, Op op, Get get) {
  const int lane32 = static_cast<int>(threadIdx.x) & 31;
  if constexpr (kSmallFold) {
    if (slots <= 32) {
      const int w = slots <= 1 ? 1 : 1 << (32 - __clz(slots - 1));
      const int i = lane32 & (w - 1);
      auto acc = i < slots ? get(i) : op.identity();
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        if (o < w) acc = op(acc, shfl_xor(acc, o));
      return acc;
    }
  }
  if constexpr (std::is_same_v<Op, MaxSumExpSplit>) {
    // A power of two of slots up to 32: lane i takes slot i mod slots, so each group of
    // `slots` lanes holds them all and the butterfly needs only log2(slots) levels.
    if (slots <= 32 && (slots & (slots - 1)) == 0) return max_sum_exp_butterfly(get(lane32 & (slots - 1)), slots);
  }
  auto acc = op.identity();
  if constexpr (kRolledSlots) {
#pragma unroll 1
    for (int i = lane32; i < slots; i += 32) acc = op(acc, get(i));
  } else {
    for (int i = lane32; i < slots; i += 32) acc = op(acc, get(i));
  }
  if constexpr (std::is_same_v<Op, MaxSumExpSplit>) {
    return max_sum_exp_butterfly(acc, 32);
  } else {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc = op(acc, shfl_xor(acc, o));
    return acc;
  }
}

// Reduces v over the team; every thread of the team gets the result. All threads of the
// CTA (and of the cluster, when cluster_size > 1) must call it the same number of times.
// kRolledSlots: fold the exchanged slots in a rolled loop. Slots (warps x CTAs of the row)
// rarely pass 32, so a lane reads one value either way; rolled, the compiler does not hold
// four loads' registers at a point where the kernel's row tile is live. Which is better is
// the kernel's register count (its row config depends on it), so the caller picks: rolled
// for the norm forward's whole-chunk kernels (4 registers fewer, ~10 % faster for LayerNorm
// bf16 at 16K columns); unrolled for the rest (rolled, cross-entropy at 4K columns took 2
// registers more, and the row config they picked lost ~25 %).
// The butterfly and the in-warp return are spelled out here rather than calling warp_reduce
// and row_in_warp: the same code through those calls gave the cross-entropy kernels other
// register counts (-6 to +6), which their row configs read (see kRolledSlots). As written,
// every row kernel's SASS is the same as before row_moments shared the exchange and the fold
// (checked with cuobjdump on all six files that reduce).
template <bool kRolledSlots = false, class T, class Op, class S>
__device__ __forceinline__ T row_reduce(T v, Op op, const RowTeam& team, ReduceStateOf<S>& state) {
  const int width = team.threads_per_row < 32 ? team.threads_per_row : 32;
  if constexpr (std::is_same_v<Op, MaxSumExpSplit>) {
    v = max_sum_exp_butterfly(v, width);
  } else {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      if (o < width) v = op(v, shfl_xor(v, o));
  }
  if (team.threads_per_row <= 32 && team.cluster_size == 1) return v;
  if constexpr (S::kPairedWarps) {
    const T* row_buf = exchange_paired_slots(v, op, team, state);
    return fold_slots<kRolledSlots>(paired_slot_count(team), op, [&](int i) { return row_buf[i]; });
  } else {
    const T* row_buf = exchange_slots(v, team, state);
    constexpr bool kSmall = !std::is_same_v<Op, MaxSumExpSplit>;
    return fold_slots<kRolledSlots, kSmall>(team.warps_per_row() * team.cluster_size, op,
                                            [&](int i) { return row_buf[i]; });
  }
}

// Mean and M2 (sum of squared deviations from the mean) of a row, with one exchange:
//  1. each warp sums its values and counts (butterfly), and centres its own values on the
//     warp's mean (`squares_about(m)`: the thread's sum of (x - m)^2 over its values);
//  2. warps post (n, sum, M2) in one exchange;
//  3. every thread folds the slots twice: the row's sum, hence its mean; then
//     M2 = sum over warps of M2_w + n_w * (mean_w - mean)^2 (Chan et al.'s combination).
// Every term is centred, so a mean large against the spread costs no accuracy (no
// E[x^2] - E[x]^2), and a row with +-inf gets an infinite or NaN mean from the plain sum, as a
// two-pass LayerNorm would. `n` is the row's length; (sum, count) are this thread's.
struct RowMoments {
  float mean, m2;
};

template <bool kRolledSlots = false, class SquaresAbout>
__device__ __forceinline__ RowMoments row_moments(float sum, int count, int n, SquaresAbout squares_about,
                                                  const RowTeam& team, ReduceState& state) {
  const Float2 sn = warp_reduce(Float2{sum, static_cast<float>(count)}, Sum2{}, team);
  const float warp_mean = sn.b > 0.f ? __fdividef(sn.a, sn.b) : 0.f;
  const float warp_m2 = warp_reduce(squares_about(warp_mean), Sum{}, team);
  if (row_in_warp(team)) return {sn.a / n, warp_m2};

  const WarpMoments* slots = exchange_slots(WarpMoments{sn.b, sn.a, warp_m2, 0.f}, team, state);
  const int count_slots = team.warps_per_row() * team.cluster_size;
  const float mean = fold_slots<kRolledSlots>(count_slots, Sum{}, [&](int i) { return slots[i].sum; }) / n;
  const float m2 = fold_slots<kRolledSlots>(count_slots, Sum{}, [&](int i) {
    const WarpMoments w = slots[i];
    if (w.n == 0.f) return 0.f;  // an empty warp (past the row's end): no mean to centre
    const float d = __fdividef(w.sum, w.n) - mean;
    return w.m2 + w.n * d * d;
  });
  return {mean, m2};
}

}  // namespace tachyon::detail
