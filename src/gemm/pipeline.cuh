#pragma once
// The shared-memory ring between the TMA producer and the MMA consumers: `stages` slots,
// each with a "full" mbarrier (the producer's expected bytes have landed) and an "empty"
// mbarrier (every consumer of every CTA in the cluster has finished reading the slot).
//
// Phase bits are explicit. An mbarrier starts in phase 0; try_wait.parity(P) succeeds once
// the phase with parity P has completed. Consumers wait on full[s] with `phase` (the
// producer fills slot s for the first time in phase 0); the producer waits on empty[s] with
// `phase ^ 1`, which succeeds at once on the first lap (the "previous" phase counts as
// completed) and afterwards only once the consumers released the slot. Both sides walk the
// slots in the same order and flip `phase` when the index wraps.
#include <cuda/ptx>

#include <cstdint>

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

__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// Arrive on the mbarrier at the same shared-memory offset in CTA `cta_rank` of this cluster
// (the CTA itself included). CCCL has no `mapa`, so this one is inline PTX. The default
// (.release.cta) semantics suffice: what the arrival publishes is "my wgmma reads of the
// slot are complete" (wgmma.wait_group returned), not data; `.release.cluster` would add a
// GPU-wide MEMBAR to every k-block.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint64_t* bar, std::uint32_t cta_rank) {
  std::uint32_t local = static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(local),
      "r"(cta_rank)
      : "memory");
}

// threadIdx.x that the compiler cannot hoist: the epilogue derives its addresses from it per
// tile instead of keeping dozens of precomputed offsets live through the mainloop.
__device__ __forceinline__ int opaque_tid() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

// The producer's arrival: one arrive plus the number of bytes the TMA copies into the slot
// will deliver (from this CTA's loads and from the cluster peers' multicasts).
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
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
