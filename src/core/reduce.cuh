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

#include "core/cluster.cuh"

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
  // The row of a launch with one row group per CTA / cluster (persistent kernels: RowLoop).
  __device__ long long row() const { return group() * rows_per_cta + row_in_cta; }
  __device__ int warps_per_row() const { return threads_per_row >= 32 ? threads_per_row / 32 : 1; }
};

// Shared-memory exchange buffers. Each reduction uses the next of two buffers in turn: a
// reduction completes only once every CTA has sent its next partial, which it does after
// reading the buffer before, so two suffice for any number of reductions in a row
// (LayerNorm's two, a persistent loop's many). Sized for 32 warps x 16 CTAs of 8-byte
// values; one mbarrier per buffer for the cluster exchange.
struct ReduceScratch {
  static constexpr int kSlots = 32 * 16;
  Float2 buf[2][kSlots];
  std::uint64_t bar[2];
};

struct ReduceState {
  ReduceScratch* scratch;
  int next = 0;
  unsigned phase = 0;  // bit b: parity of buffer b's barrier
};

// Start of every kernel that reduces across a cluster: barriers initialised and published,
// then a relaxed arrive; cluster_reduce_ready (the matching wait) must come before the first
// reduction — kernels put their first loads in between.
__device__ __forceinline__ void cluster_reduce_prologue(const RowTeam& team, ReduceState& state) {
  if (team.cluster_size > 1) {
    if (threadIdx.x == 0) exchange_barrier_init(state.scratch->bar, 2);
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
template <class P>
__device__ __forceinline__ RowTeam start_team(const P& p, ReduceState& reduce) {
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

// Reduces v over the team; every thread of the team gets the result. All threads of the
// CTA (and of the cluster, when cluster_size > 1) must call it the same number of times.
// kRolledSlots: fold the exchanged slots in a rolled loop. Slots (warps x CTAs of the row)
// rarely pass 32, so a lane reads one value either way; rolled, the compiler does not hold
// four loads' registers at a point where the kernel's row tile is live. Which is better is
// the kernel's register count (its row config depends on it), so the caller picks: the norm
// forward's whole-chunk kernels (LayerNorm bf16 8 items 84 -> 80 registers, 16384 0.89 ->
// 0.98 x copy); unrolled for the rest (cross-entropy at 4096: 64 -> 66 registers rolled, and
// 0.93 -> 0.68 through the row config that follows).
template <bool kRolledSlots = false, class T, class Op>
__device__ __forceinline__ T row_reduce(T v, Op op, const RowTeam& team, ReduceState& state) {
  const int width = team.threads_per_row < 32 ? team.threads_per_row : 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width) v = op(v, shfl_xor(v, o));
  if (team.threads_per_row <= 32 && team.cluster_size == 1) return v;

  // One slot per (CTA, warp) of the row, in every CTA of the cluster.
  const int wpr = team.warps_per_row();
  const int slots = wpr * team.cluster_size;
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
    if (threadIdx.x == 0) exchange_expect(bar, static_cast<unsigned>(slots * sizeof(T)));
    if (lane32 < team.cluster_size) exchange_send(row_buf + slot, bar, lane32, v);
    exchange_wait(bar, (state.phase >> b) & 1u);
    state.phase ^= 1u << b;
  }
  T acc = op.identity();
  if constexpr (kRolledSlots) {
#pragma unroll 1
    for (int i = lane32; i < slots; i += 32) acc = op(acc, row_buf[i]);
  } else {
    for (int i = lane32; i < slots; i += 32) acc = op(acc, row_buf[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc = op(acc, shfl_xor(acc, o));
  return acc;
}

}  // namespace tachyon::detail
