#pragma once
// What the host hands the GEMM kernels. Everything is in the kernel's view: after an A/B
// swap the kernel computes D^T, so its rows are the problem's columns and the output,
// C and bias are addressed through (row, col) strides rather than assumed row-major.
#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "gemm/scheduler.h"

namespace tachyon::detail::gemm {

// Matches tachyon::Activation.
enum EpilogueActivation : int { kActNone = 0, kActRelu = 1, kActSilu = 2, kActGeluTanh = 3 };

struct EpilogueParams {
  void* d = nullptr;
  std::int64_t d_row_stride = 0, d_col_stride = 1;  // elements
  const void* c = nullptr;                          // read only when beta != 0
  std::int64_t c_row_stride = 0, c_col_stride = 1;
  const void* bias = nullptr;  // optional, one value per column of the problem's D
  int bias_dtype = 0;          // tachyon::DType
  int bias_on_rows = 0;        // swapped: the problem's columns are the kernel's rows
  float alpha = 1.f, beta = 0.f;
  int activation = kActNone;
  int tma_store = 0;  // 1: through shared memory and the `d` tensor map
  int m = 0, n = 0;   // the kernel's output extent
};

struct GemmParams {  // CUtensorMap members carry their own 64-byte alignment
  CUtensorMap a;  // kernel A: (m, k) K-major, box 128 x 64
  CUtensorMap b;  // kernel B: (n, k) box (block_n / cluster) x 64, or (k, n) box 64 x 64
  CUtensorMap d;  // output, box 64 x (128 bytes); valid when epi.tma_store
  int m = 0, n = 0, k = 0;
  int k_blocks = 0;
  int stages = 0;
  TileScheduler sched;
  EpilogueParams epi;
};

}  // namespace tachyon::detail::gemm
