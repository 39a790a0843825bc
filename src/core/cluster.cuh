#pragma once
// Thread-block cluster primitives (sm_90): rank, barrier, and stores into a peer CTA's
// shared memory (distributed shared memory). Built on CCCL's cuda::ptx wrappers; on older
// architectures a cluster is always one CTA and these compile to no-ops.
#include <cuda/ptx>

#include <cstdint>
#include <type_traits>

namespace tachyon::detail {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TACHYON_HAS_CLUSTERS 1
#else
#define TACHYON_HAS_CLUSTERS 0
#endif

__device__ __forceinline__ int cluster_rank() {
#if TACHYON_HAS_CLUSTERS
  return static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());
#else
  return 0;
#endif
}

// Arrive without ordering: used at kernel start, so that the matching wait (just before the
// first remote store) proves every peer CTA has started and its shared memory exists.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);
#endif
}

__device__ __forceinline__ void cluster_wait() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
#endif
}

// ---- mbarrier exchange: st.async into a peer's shared memory, completing bytes on the
// peer's mbarrier. Each CTA waits just for the bytes it receives, and no fence is needed on
// either side:
//  - the arming arrival (expect_tx) publishes nothing of this thread's, so it is relaxed and
//    CTA-scoped. With .release.cluster it compiled to MEMBAR.ALL.GPU, which waits for every
//    load and store the thread has in flight: in a pipelined row loop, the next row's loads,
//    so each CTA's exchange waited a DRAM round trip;
//  - the values arrive through the async proxy, whose completion the barrier's phase flip
//    reports; the local wait acquires at CTA scope (with .acquire.cluster it compiled to an
//    L1 invalidate, CCTL.IVALL, per reduction). Buffer reuse is ordered by the exchange
//    itself (ReduceScratch).

// One thread initialises the barriers; the fence publishes them to the cluster before the
// kernel's start-up cluster_arrive_relaxed / cluster_wait pair.
__device__ __forceinline__ void exchange_barrier_init(std::uint64_t* bar, int count) {
#if TACHYON_HAS_CLUSTERS
  for (int i = 0; i < count; ++i) cuda::ptx::mbarrier_init(bar + i, 1);
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

// The local barrier's one arrival, announcing the bytes the peers will deliver.
__device__ __forceinline__ void exchange_expect(std::uint64_t* bar, unsigned bytes) {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
#endif
}

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

__device__ __forceinline__ void exchange_wait(std::uint64_t* bar, unsigned parity) {
#if TACHYON_HAS_CLUSTERS
  while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cta, bar, parity)) {
  }
#endif
}

}  // namespace tachyon::detail
