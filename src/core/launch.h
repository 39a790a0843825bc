#pragma once
// Host-side launch primitives shared by the row kernels (row_launch.cuh) and the GEMM
// (gemm/gemm_launch.cuh): the cluster and programmatic-launch attributes, the cluster occupancy
// query, and the dynamic shared-memory and cluster-size opt-ins.
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/check.h"

namespace tachyon::detail {

// The launch attribute of a 1-D cluster of `ctas` CTAs (along x).
inline cudaLaunchAttribute cluster_dim_attribute(int ctas) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(ctas);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  return attr;
}

// Programmatic dependent launch: the kernel may be scheduled while the previous kernel of its
// stream still runs (once every CTA of that one has called allow_dependent_launch or exited), so
// its launch latency hides under that kernel's tail. Every thread must call wait_prior_grid
// (core/grid_dependency.cuh) before it touches anything the previous kernel writes or reads, and
// before it exits: then this kernel's completion implies that one's, which later kernels rely on.
// Kernels further back had completed before that one started.
inline cudaLaunchAttribute programmatic_launch_attribute() {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return attr;
}

// kernel<<<grid, block, 0, stream>>>(args...), launched programmatically.
template <class... Params, class... Args>
void launch_programmatic(const char* op, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                         Args... args) {
  cudaLaunchConfig_t lc{};
  lc.gridDim = grid;
  lc.blockDim = block;
  lc.stream = stream;
  cudaLaunchAttribute attr[1] = {programmatic_launch_attribute()};
  lc.attrs = attr;
  lc.numAttrs = 1;
  TACHYON_CUDA_CHECK(op, cudaLaunchKernelEx(&lc, kernel, args...));
  TACHYON_CHECK_LAUNCH(op);
}

// Clusters above 8 CTAs need the non-portable opt-in (Hopper allows 16).
inline void allow_cluster_size(const char* op, const void* kernel, int ctas) {
  if (ctas > 8) TACHYON_CUDA_CHECK(op, cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
}

// How many clusters of `ctas` CTAs of `kernel` (`threads` each, `smem` bytes of dynamic shared
// memory) the device holds at once: the cluster occupancy calculator, which knows that a
// cluster must fit in one GPC (per-SM occupancy / cluster size overestimates large clusters).
// Not cached, and the error is the caller's to handle.
inline cudaError_t query_max_active_clusters(int* clusters, const void* kernel, int ctas, int threads,
                                             std::size_t smem) {
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(static_cast<unsigned>(ctas));
  lc.blockDim = dim3(static_cast<unsigned>(threads));
  lc.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1] = {cluster_dim_attribute(ctas)};
  lc.attrs = attr;
  lc.numAttrs = 1;
  return cudaOccupancyMaxActiveClusters(clusters, kernel, &lc);
}

// Lets `kernel` take `smem` bytes of dynamic shared memory on the current device: the opt-in
// (static + dynamic past 48 KiB needs it). Done once per kernel and device (a function's
// attributes are per device), for all the device allows (its opt-in limit less the kernel's
// static shared memory), so that a larger request later needs no second call; throws when
// `smem` is more than that. The carveout stays the driver's choice (it sizes shared memory
// to the launch's occupancy).
inline void allow_dynamic_smem(const char* op, const void* kernel, std::size_t smem) {
  if (smem == 0) return;
  int device = 0;
  TACHYON_CUDA_CHECK(op, cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, std::size_t> done;  // (kernel, device) -> bytes allowed
  std::lock_guard<std::mutex> lock(mutex);
  auto it = done.find({kernel, device});
  if (it != done.end() && it->second >= smem) return;
  int optin = 0;
  TACHYON_CUDA_CHECK(op, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attr{};
  TACHYON_CUDA_CHECK(op, cudaFuncGetAttributes(&attr, kernel));
  const std::size_t allowed = static_cast<std::size_t>(optin) - attr.sharedSizeBytes;
  if (smem > allowed)
    throw Error(std::string(op) + ": internal: " + std::to_string(smem) + " bytes of dynamic shared memory (at most " +
                std::to_string(allowed) + ")");
  TACHYON_CUDA_CHECK(op, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(allowed)));
  done[{kernel, device}] = allowed;
}

}  // namespace tachyon::detail
