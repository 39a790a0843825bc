#pragma once
// Where a thread's chunks of a row are, and the row pointers of RowArg operands.
//
// Chunk k of a thread is chunk index j = k * team.size() + team.rank() of the row: the
// team's threads sweep the row together, 16 bytes each, so every warp access is one
// contiguous 512-byte span. Chunk j covers columns [j*vec - off, j*vec - off + vec), where
// `off` is the row's frame offset (core/vec.cuh): 0 for 16-byte aligned rows.
#include "core/reduce.cuh"
#include "core/row_arg.h"
#include "core/vec.cuh"

namespace tachyon::detail {

__device__ __forceinline__ int dtype_bytes(DType d) { return d == DType::f32 ? 4 : 2; }

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

// First column of a thread's k-th chunk.
__device__ __forceinline__ long long chunk_col(int k, const RowTeam& team, int vec, int off) {
  return (static_cast<long long>(k) * team.size() + team.rank()) * vec - off;
}

// True when the whole chunk lies inside [0, n): no per-element masks needed.
__device__ __forceinline__ bool chunk_inside(long long c0, int vec, long long n) { return c0 >= 0 && c0 + vec <= n; }

}  // namespace tachyon::detail
