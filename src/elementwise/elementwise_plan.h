#pragma once
// Launch plan for the elementwise kernel: a pure function of the problem, covered by CPU
// tests. The kernel walks a flat index over (row, chunk) pairs; a chunk is 16 bytes of the
// output dtype, placed in the output row's frame (see core/vec.cuh) so that every chunk but
// a row's first and last is one aligned 128-bit access.
#include <cstdint>

#include "core/host_device.h"

namespace tachyon::detail {

struct ElementwisePlan {
  std::int64_t chunks_per_row = 0;  // chunks the frame of one row can span
  std::int64_t total_chunks = 0;    // rows * chunks_per_row
  int threads = 0;                  // per CTA
  int chunks_per_thread = 0;        // loads each thread keeps in flight (kernel's kUnroll)
  std::int64_t blocks = 0;
};

// `vec` elements per chunk; `max_frame_offset` is the largest element offset a row start
// can have within its 16-byte segment (0 when every row is 16-byte aligned).
inline ElementwisePlan plan_elementwise(std::int64_t rows, std::int64_t cols, int vec, int max_frame_offset) {
  // 256 threads x 4 chunks: 16 KB of each input in flight per CTA, 8 CTAs (2048 threads) per
  // SM keep ~128 KB per input in flight, enough to cover HBM latency at full bandwidth.
  constexpr int kThreads = 256;
  constexpr int kChunksPerThread = 4;
  ElementwisePlan p;
  p.threads = kThreads;
  p.chunks_per_thread = kChunksPerThread;
  if (rows <= 0 || cols <= 0) return p;
  p.chunks_per_row = ceil_div(cols + max_frame_offset, vec);
  p.total_chunks = rows * p.chunks_per_row;
  const std::int64_t per_block = static_cast<std::int64_t>(kThreads) * kChunksPerThread;
  p.blocks = ceil_div(p.total_chunks, per_block);
  return p;
}

}  // namespace tachyon::detail
