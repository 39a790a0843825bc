#pragma once
// TMA tensor maps for row-major matrices, encoded on the host through the driver entry
// point (cudaGetDriverEntryPointByVersion: no link against libcuda, so the library links on
// machines without a driver) and cached, so repeated calls with the same tensors do not
// re-encode. A map is 128 bytes, passed to kernels as a __grid_constant__ parameter.
#include <cuda.h>  // CUtensorMap and its enums only; no driver symbol is linked

#include <cstdint>

#include "tachyon/tensor.h"

namespace tachyon::detail::gemm {

// What TMA requires of a row-major matrix: a 16-byte aligned base and a row stride that is a
// multiple of 16 bytes (a single row has no stride to check), extents below 2^32.
bool tma_compatible(const void* base, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row_stride);

struct TmaMatrix {
  const void* base = nullptr;
  DType dtype = DType::bf16;
  std::int64_t rows = 0, cols = 0, row_stride = 0;  // elements
  int box_rows = 0, box_cols = 0;                   // box_cols * element size <= 128 (swizzle span)
};

// The 2-D tensor map (dim 0 = columns, dim 1 = rows) with 128-byte swizzle, zero fill out of
// bounds and 256-byte L2 promotion. Cached by every field of `m`. Throws tachyon::Error
// naming `op` when the driver entry point is missing or the encode fails.
CUtensorMap tma_matrix_map(const char* op, const TmaMatrix& m);

// Number of encodes performed so far (for tests of the cache).
std::uint64_t tma_encode_count();

}  // namespace tachyon::detail::gemm
