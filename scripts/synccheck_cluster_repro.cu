// A minimal kernel that compute-sanitizer's synccheck reports as failing although it is
// correct: the evidence behind docs/perf.md#synccheck-and-16-cta-clusters.
//
// Each CTA initialises one mbarrier, publishes it to the cluster (fence.mbarrier_init), and
// passes one cluster barrier (barrier.cluster.arrive.release / wait.acquire); thread 0 writes
// its rank. Nothing else touches shared memory. Optionally (mode 2) the CTAs then run the
// reduction ladder's exchange pattern: a persistent loop of st.async sends into two buffers,
// completed on per-buffer mbarriers (core/cluster.cuh, core/reduce.cuh's exchange_slots).
//
// Build and run on the H100 (scripts/gpu-check.sh does not; run it by hand):
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o repro scripts/synccheck_cluster_repro.cu
//   ./repro MODE CLUSTER CLUSTERS SMEM_KIB            # plain: "sync no error"
//   compute-sanitizer --tool synccheck ./repro ...    # 16-CTA clusters, 2+ CTAs an SM: error 700
// Measured (2026-11-22, CUDA 13.0, H100 SXM): mode 1 with 16-CTA clusters
// passes natively and fails under synccheck (cudaErrorIllegalAddress, 0 errors reported) at
// 0, 50 and 100 KiB of dynamic shared memory (2+ CTAs an SM), single wave or not; it passes
// at 150 KiB (one CTA an SM), with 8- and 4-CTA clusters, and in mode 0 (no barrier).
#include <cuda/ptx>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void cluster_kernel(int mode, int* out) {
  __shared__ __align__(8) std::uint64_t bar[2];
  __shared__ __align__(16) unsigned long long buf[2][16 * 32];
  const unsigned rank = cuda::ptx::get_sreg_cluster_ctarank();
  const unsigned ctas = cuda::ptx::get_sreg_cluster_nctarank();
  if (mode == 0) {
    if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(rank);
    return;
  }
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&bar[0], 1);
    cuda::ptx::mbarrier_init(&bar[1], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
  if (mode == 1) {
    if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(rank);
    return;
  }
  // mode 2: 64 exchanges; lane r of every warp sends the warp's value to CTA r.
  const int warps = static_cast<int>(blockDim.x / 32), warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned phase = 0;
  unsigned long long acc = 0;
  for (int it = 0; it < 64; ++it) {
    const int b = it & 1;
    if (threadIdx.x == 0)
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &bar[b], 8u * warps * ctas);
    if (lane < static_cast<int>(ctas)) {
      void* slot = &buf[b][rank * warps + warp];
      auto* remote = static_cast<std::uint64_t*>(__cluster_map_shared_rank(slot, lane));
      auto* remote_bar = static_cast<std::uint64_t*>(__cluster_map_shared_rank(static_cast<void*>(&bar[b]), lane));
      cuda::ptx::st_async(remote, static_cast<std::uint64_t>(acc + rank + 1), remote_bar);
    }
    while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cta, &bar[b],
                                                (phase >> b) & 1u)) {
    }
    phase ^= 1u << b;
    unsigned long long s = 0;
    for (int i = lane; i < warps * static_cast<int>(ctas); i += 32) s += buf[b][i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    acc = s;
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(acc & 0x7fffffff);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODE(0|1|2) CLUSTER CLUSTERS SMEM_KIB\n", argv[0]);
    return 2;
  }
  const int mode = std::atoi(argv[1]), cluster = std::atoi(argv[2]), clusters = std::atoi(argv[3]);
  const std::size_t smem = static_cast<std::size_t>(std::atoi(argv[4])) * 1024;
  int* out = nullptr;
  if (cudaMalloc(&out, sizeof(int) * cluster * clusters) != cudaSuccess) return 1;
  cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cluster * clusters);
  cfg.blockDim = dim3(512);
  cfg.dynamicSmemBytes = smem;  // unused: only sets how many CTAs share an SM
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int active = -1;
  cudaOccupancyMaxActiveClusters(&active, reinterpret_cast<const void*>(cluster_kernel), &cfg);
  const cudaError_t launch = cudaLaunchKernelEx(&cfg, cluster_kernel, mode, out);
  const cudaError_t sync = cudaDeviceSynchronize();
  std::printf("mode %d cluster %d x %d smem %zu KiB active clusters %d: launch %s, sync %s\n", mode, cluster,
              clusters, smem / 1024, active, cudaGetErrorString(launch), cudaGetErrorString(sync));
  return launch == cudaSuccess && sync == cudaSuccess ? 0 : 1;
}
