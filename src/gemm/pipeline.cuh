#pragma once
// The shared-memory ring between the TMA producer and the MMA consumers: `stages` slots,
// each with a "full" mbarrier (the producer's expected bytes have landed) and an "empty"
// mbarrier (every consumer of every CTA in the cluster has finished reading the slot).
//
// The barriers are core/mbarrier.cuh's, with explicit phase bits. Consumers wait on full[s]
// with `phase` (the producer fills slot s for the first time in phase 0); the producer waits
// on empty[s] with `phase ^ 1`, which succeeds at once on the first lap (the "previous" phase
// counts as completed) and afterwards only once the consumers released the slot. Both sides
// walk the slots in the same order and flip `phase` when the index wraps.
#include <cstdint>

#include "core/mbarrier.cuh"
#include "core/named_barrier.cuh"

namespace tachyon::detail::gemm {

struct RingState {
  std::uint32_t stage = 0;
  std::uint32_t phase = 0;
  __device__ __forceinline__ void advance(std::uint32_t stages) {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// threadIdx.x that the compiler cannot hoist: the epilogue derives its addresses from it per
// tile instead of keeping dozens of precomputed offsets live through the mainloop.
__device__ __forceinline__ int opaque_tid() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

// Register budget moves between warpgroups (sm_90a). All threads of a warpgroup execute it.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace tachyon::detail::gemm
