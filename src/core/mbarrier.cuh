#pragma once
// mbarrier primitives (sm_90), the one set used by the GEMM's TMA ring (gemm/pipeline.cuh)
// and the row kernels' cluster exchange (cluster.cuh). CCCL's cuda::ptx wrappers where it
// has the instruction; inline PTX for the remote arrival, which it lacks. On older
// architectures they compile to nothing: the row kernels call them only with clusters, and
// the GEMM's TMA kernel is built for sm_90a alone.
//
// Phases: an mbarrier starts in phase 0; try_wait.parity(P) succeeds once the phase with
// parity P has completed (the phase before the first counts as completed).
#include <cuda/ptx>

#include <cstdint>

namespace tachyon::detail {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TACHYON_HAS_CLUSTERS 1
#else
#define TACHYON_HAS_CLUSTERS 0
#endif

// One thread initialises a barrier for `arrivals` arrivals per phase.
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t arrivals) {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::mbarrier_init(bar, arrivals);
#endif
}

// Publishes the barriers this thread initialised to the cluster; a cluster barrier must
// follow before any peer uses them.
__device__ __forceinline__ void mbar_init_fence() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

// One arrival plus `bytes` expected from asynchronous copies (TMA, st.async) into this CTA.
// Release at CTA scope: orders this thread's earlier accesses before the phase completes.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
#endif
}

// The same without ordering, for an arrival that publishes nothing of this thread's.
__device__ __forceinline__ void mbar_arrive_expect_tx_relaxed(std::uint64_t* bar, std::uint32_t bytes) {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
#endif
}

// Arrives on the barrier at the same shared-memory offset in CTA `cta_rank` of this cluster
// (the CTA itself included). CCCL has no `mapa`, and its shared::cluster arrivals are
// .cluster-scoped only; the default .release.cta here suffices where the arrival publishes
// "my reads of the slot are done", not data (.release.cluster adds a GPU-wide MEMBAR).
__device__ __forceinline__ void mbar_arrive_cluster(std::uint64_t* bar, std::uint32_t cta_rank) {
#if TACHYON_HAS_CLUSTERS
  const std::uint32_t local = static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(local),
      "r"(cta_rank)
      : "memory");
#endif
}

// Spins until the phase of parity `parity` has completed; acquire at CTA scope.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
#if TACHYON_HAS_CLUSTERS
  while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cta, bar, parity)) {
  }
#endif
}

}  // namespace tachyon::detail
