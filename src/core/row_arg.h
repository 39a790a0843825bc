#pragma once
// A row-major operand as kernels see it: base pointer, row stride in elements, dtype.
// Absent (optional operand not given) when data is null. Plain data for kernel parameters.
#include <cstdint>

#include "tachyon/tensor.h"

namespace tachyon::detail {

struct RowArg {
  const void* data = nullptr;
  std::int64_t stride = 0;
  DType dtype = DType::f32;
};

// How a kernel reads a row-invariant vector operand (a norm's weight and bias): from shared
// memory where the launch staged it, or always staged (one path compiled: VectorStage).
enum class Staging { per_launch, always };

// True when every row of `a` (n elements of elem_bytes each, rows `stride` elements apart)
// is made of whole 16-byte chunks starting 16-byte aligned: the condition for the row
// kernels' builds without edge or alignment tests. A vector operand has stride 0.
// chunk_bytes: a narrower operand's part of the chunk (bf16 dy beside fp32 rows: 8).
inline bool whole_chunk_rows(const RowArg& a, std::int64_t n, int elem_bytes, int chunk_bytes = 16) {
  return reinterpret_cast<std::uintptr_t>(a.data) % chunk_bytes == 0 && (n * elem_bytes) % chunk_bytes == 0 &&
         (a.stride * elem_bytes) % chunk_bytes == 0;
}

// Whether every row of `a` and `b` (elem_bytes each) starts at the same offset in the 16-byte
// grid: equal base addresses and row strides in bytes, modulo 16. Such operands share each row's
// frame (frame_offset), so one chunk grid serves both.
inline bool same_chunk_frames(const RowArg& a, const RowArg& b, int elem_bytes) {
  auto phase = [elem_bytes](const RowArg& r) {
    return (reinterpret_cast<std::uintptr_t>(r.data) % 16) * 16 +
           static_cast<std::uintptr_t>(static_cast<std::uint64_t>(r.stride) * elem_bytes % 16);
  };
  return phase(a) == phase(b);
}

}  // namespace tachyon::detail
