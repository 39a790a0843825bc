#pragma once
// Where a thread's chunks of a row are, and the row pointers of RowArg operands.
//
// Chunk k of a thread is chunk index j = k * team.size() + team.rank() of the row: the
// team's threads sweep the row together, 16 bytes each, so every warp access is one
// contiguous 512-byte span. Chunk j covers columns [j*vec - off, j*vec - off + vec), where
// `off` is the row's frame offset (core/vec.cuh): 0 for 16-byte aligned rows.
#include <cstdint>

#include "core/host_device.h"
#include "core/reduce.cuh"
#include "core/row_arg.h"
#include "core/vec.cuh"

namespace tachyon::detail {

__device__ __forceinline__ int dtype_bytes(DType d) { return d == DType::f32 ? 4 : 2; }

// Asks L2 to fetch part `part` of `parts` equal parts of a row of `bytes` bytes at `row`
// (cp.async.bulk.prefetch.L2; no cuda::ptx wrapper in CUDA 13.0's CCCL), where `enable` holds
// and the part is whole 16-byte units at a 16-byte aligned address, as the instruction
// requires; else nothing. Holds no registers and has nothing to wait for: the CTAs of a cluster,
// one thread each, cover a row that their later loads then find in L2. One predicated
// instruction, no branch: a run-time `enable` does not split the caller's loop into blocks that
// ptxas schedules apart (as a branch did: the LayerNorm bf16 backward at 256K columns lost
// ~5 %). The memory clobber keeps it where the caller put it, after the loads it follows
// (without it the fp32 long-row backward lost ~9 %).
__device__ __forceinline__ void prefetch_l2_part(const void* row, unsigned bytes, int part, int parts,
                                                 bool enable = true) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned size = bytes / static_cast<unsigned>(parts);
  const auto at = reinterpret_cast<std::uintptr_t>(row) + static_cast<std::uintptr_t>(size) * part;
  const unsigned go = enable && size != 0 && size % 16 == 0 && at % 16 == 0;
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %2, 0;\n\t@p cp.async.bulk.prefetch.L2.global [%0], %1;\n\t}" ::"l"(at),
      "r"(size), "r"(go) : "memory");
#endif
}

template <class T>
__device__ __forceinline__ const T* row_of(const RowArg& a, long long row) {
  return static_cast<const T*>(a.data) + row * a.stride;
}
template <class T>
__device__ __forceinline__ T* mutable_row_of(const RowArg& a, long long row) {
  return const_cast<T*>(row_of<T>(a, row));
}
// Untyped: for operands whose dtype is only known at run time.
__device__ __forceinline__ const void* row_of(const RowArg& a, long long row) {
  return static_cast<const char*>(a.data) + row * a.stride * dtype_bytes(a.dtype);
}
__device__ __forceinline__ void* mutable_row_of(const RowArg& a, long long row) {
  return const_cast<void*>(row_of(a, row));
}

// First column of a thread's k-th chunk (rows are shorter than 2^31: 32-bit column math).
__device__ __forceinline__ int chunk_col(int k, const RowTeam& team, int vec, int off) {
  return (k * team.size() + team.rank()) * vec - off;
}

// True when the whole chunk lies inside [0, n): no per-element masks needed.
__device__ __forceinline__ bool chunk_inside(int c0, int vec, int n) { return c0 >= 0 && c0 + vec <= n; }

// Columns of the chunk at c0 that lie inside [0, n).
__device__ __forceinline__ int chunk_count(int c0, int vec, int n) {
  const int lo = c0 > 0 ? c0 : 0;
  const int hi = c0 + vec < n ? c0 + vec : n;
  return hi > lo ? hi - lo : 0;
}

// A row split for a kernel that only reads it once (the streaming cross-entropy's statistics):
// a body of whole 16-byte chunks from the row's first 128-byte boundary, and the `head`
// elements before that boundary plus the `tail` elements after the body's last whole chunk.
// Edge element i (i < edges()) is at column edge_col(i). The body's loads then need no
// element path (its out-of-line call waits for the thread's loads in flight); the edges,
// at most 128 / sizeof(T) - 1 + 16 / sizeof(T) - 1 of them, are single loads.
struct RowEdges {
  int head, tail, n;
  template <class T>
  __device__ static RowEdges make(const T* row, int n) {
    constexpr int kVecElems = 16 / static_cast<int>(sizeof(T));
    const int to_line = static_cast<int>((128u - (reinterpret_cast<std::uintptr_t>(row) & 127u)) & 127u) /
                        static_cast<int>(sizeof(T));
    RowEdges r;
    r.n = n;
    r.head = to_line < n ? to_line : n;
    r.tail = (n - r.head) % kVecElems;
    return r;
  }
  __device__ int body() const { return n - head - tail; }
  __device__ int edges() const { return head + tail; }
  __device__ int edge_col(int i) const { return i < head ? i : n - tail + (i - head); }
};

// Keeps a pointer computed where it stands. Without it ptxas sinks a row's address into each
// chunk's load or store, recomputing the 64-bit row x stride there (up to ~12 instructions a
// chunk in the backward's branches): the row kernels are near the issue limit on the H200.
// An empty asm, no instruction. (docs/perf/norm.md#backward-design)
template <class P>
__device__ __forceinline__ void keep_here(P*& ptr) {
  asm volatile("" : "+l"(ptr));
}

// Persistent row walking: a grid of team.groups() row groups (clusters of CTAs) walks every
// row group of the problem. All CTAs run the same number of iterations so that the barriers
// inside the loop line up; rows past the end are not `valid` and only join the reductions.
struct RowLoop {
  long long iters;
  __device__ RowLoop(const RowTeam& team, long long rows) {
    const long long total_groups = ceil_div(rows, team.rows_per_cta);
    iters = ceil_div(total_groups, team.groups());
  }
  __device__ static long long row(const RowTeam& team, long long it) {
    return (team.group() + it * team.groups()) * team.rows_per_cta + team.row_in_cta;
  }
};

// Access to a kernel's secondary operands (weight, bias, residual, outputs). kTyped: every
// operand has the row's dtype T, one typed code path (the common case, and the fastest);
// otherwise each operand's run-time dtype (mixed-precision calls).
template <class T, bool kTyped>
struct OperandIO {
  __device__ static const void* row(const RowArg& a, long long r) {
    if constexpr (kTyped) return row_of<T>(a, r);
    else return row_of(a, r);
  }
  __device__ static void* mutable_row(const RowArg& a, long long r) { return const_cast<void*>(row(a, r)); }
  template <Cache kCache, int V>
  __device__ static void load(const void* p, DType d, int c0, int n, float (&out)[V], float fill) {
    if constexpr (kTyped) load_chunk_f<kCache>(static_cast<const T*>(p), c0, n, out, fill);
    else load_chunk_f<kCache, V>(p, d, c0, n, out, fill);
  }
  template <Cache kCache, int V>
  __device__ static void store(void* p, DType d, int c0, int n, const float (&in)[V]) {
    if constexpr (kTyped) store_chunk_f<kCache>(static_cast<T*>(p), c0, n, in);
    else store_chunk_f<kCache, V>(p, d, c0, n, in);
  }
};

}  // namespace tachyon::detail
