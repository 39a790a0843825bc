#pragma once
// Thread-block cluster primitives (sm_90): rank, cluster barrier, and stores into a peer
// CTA's shared memory (distributed shared memory) that complete on its mbarrier
// (mbarrier.cuh). Built on CCCL's cuda::ptx wrappers; on older architectures a cluster is
// always one CTA and these compile to no-ops.
#include <cuda/ptx>

#include <cstdint>
#include <type_traits>

#include "core/mbarrier.cuh"

namespace tachyon::detail {

__device__ __forceinline__ int cluster_rank() {
#if TACHYON_HAS_CLUSTERS
  return static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());
#else
  return 0;
#endif
}

// This CTA's cluster in the grid (1-D grids; a launch without clusters has clusters of one
// CTA, so this is blockIdx.x there).
__device__ __forceinline__ unsigned cluster_id() {
#if TACHYON_HAS_CLUSTERS
  return cuda::ptx::get_sreg_clusterid_x();
#else
  return blockIdx.x;
#endif
}

// Arrive without ordering: used at kernel start, so that the matching wait (just before the
// first remote store) proves every peer CTA has started and its shared memory exists.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);
#endif
}

// Arrive with release: this thread's earlier shared-memory writes (e.g. barrier
// initialisation) are visible to the peers once their matching wait returns.
__device__ __forceinline__ void cluster_arrive() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
#endif
}

__device__ __forceinline__ void cluster_wait() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
#endif
}

// The whole cluster's barrier: every thread of every CTA arrives (release), then waits (acquire).
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// ---- the mbarrier exchange: st.async into a peer's shared memory, completing bytes on the
// peer's mbarrier (reduce.cuh, exchange_slots). Each CTA arms its own barrier for the bytes it
// will receive and waits just for them, with no fence on either side:
//  - the arming arrival publishes nothing of this thread's, so it is relaxed and CTA-scoped
//    (mbar_arrive_expect_tx_relaxed). With .release.cluster it compiled to MEMBAR.ALL.GPU,
//    which waits for every load and store the thread has in flight: in a pipelined row loop,
//    the next row's loads, so each CTA's exchange waited a DRAM round trip;
//  - the values arrive through the async proxy, whose completion the barrier's phase flip
//    reports; the local wait acquires at CTA scope (mbar_wait; with .acquire.cluster it
//    compiled to an L1 invalidate, CCTL.IVALL, per reduction). Buffer reuse is ordered by
//    the exchange itself (ReduceScratch).

// Writes v to `local`'s counterpart in CTA `rank`, completing sizeof(T) bytes on that CTA's
// counterpart of `bar`. T is 4, 8 or 16 bytes (16: st.async.v4.b32, `local` 16-byte aligned).
template <class T>
__device__ __forceinline__ void exchange_send(T* local, std::uint64_t* bar, int rank, const T& v) {
#if TACHYON_HAS_CLUSTERS
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "st.async moves 4, 8 or 16 bytes");
  using W = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  using Words = std::conditional_t<sizeof(T) == 16, std::uint32_t[4], W>;
  using Elem = std::conditional_t<sizeof(T) == 16, std::uint32_t, W>;
  Words w;
  memcpy(&w, &v, sizeof(T));
  auto* remote =
      static_cast<Elem*>(__cluster_map_shared_rank(static_cast<void*>(local), static_cast<unsigned>(rank)));
  auto* remote_bar =
      static_cast<std::uint64_t*>(__cluster_map_shared_rank(static_cast<void*>(bar), static_cast<unsigned>(rank)));
  cuda::ptx::st_async(remote, w, remote_bar);
#else
  *local = v;
#endif
}

}  // namespace tachyon::detail
