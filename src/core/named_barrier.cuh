#pragma once
// Named CTA barriers (bar.sync on ids 1..15; 0 is __syncthreads) over a subset of a CTA's
// warps. CCCL's cuda::ptx has no wrapper for them. The shared-memory accesses a thread made
// before the barrier are ordered before those the participating threads make after it (PTX
// ISA, barrier{.cta}).
#include <cstdint>

namespace tachyon::detail {

// Waits until `threads` threads (a multiple of 32) have arrived at barrier `id`.
__device__ __forceinline__ void named_barrier_sync(std::uint32_t id, std::uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace tachyon::detail
