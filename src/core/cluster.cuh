#pragma once
// Thread-block cluster primitives (sm_90): rank, barrier, and stores into a peer CTA's
// shared memory (distributed shared memory). Built on CCCL's cuda::ptx wrappers; on older
// architectures a cluster is always one CTA and these compile to no-ops.
#include <cuda/ptx>

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

// Arrive after this thread's remote stores; the matching wait makes them visible.
__device__ __forceinline__ void cluster_arrive_release() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
#endif
}

__device__ __forceinline__ void cluster_wait() {
#if TACHYON_HAS_CLUSTERS
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
#endif
}

// Stores v at the address `local` would have in CTA `rank` of this cluster.
template <class T>
__device__ __forceinline__ void store_to_cta(T* local, int rank, const T& v) {
#if TACHYON_HAS_CLUSTERS
  *static_cast<T*>(__cluster_map_shared_rank(static_cast<void*>(local), static_cast<unsigned>(rank))) = v;
#else
  *local = v;
#endif
}

}  // namespace tachyon::detail
