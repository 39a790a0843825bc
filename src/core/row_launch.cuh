#pragma once
// Launching row-wise kernels: the grid from a RowConfig, clusters through cudaLaunchKernelEx,
// the register tile (items) turned into a template argument in one place.
#include <cuda_runtime.h>

#include <algorithm>

#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "core/check.h"
#include "core/launch.h"
#include "core/row_config.h"

namespace tachyon::detail {

template <int N>
using IntTag = std::integral_constant<int, N>;

// Calls f(IntTag<items>{}) for a RowConfig's item count (0 = streaming).
template <class F>
void dispatch_items(const char* op, int items, F&& f) {
  switch (items) {
    case 0: f(IntTag<0>{}); break;
    case 1: f(IntTag<1>{}); break;
    case 2: f(IntTag<2>{}); break;
    case 4: f(IntTag<4>{}); break;
    case 8: f(IntTag<8>{}); break;
    case 12: f(IntTag<12>{}); break;
    case 16: f(IntTag<16>{}); break;
    default: throw Error(std::string(op) + ": internal: no kernel for " + std::to_string(items) + " items");
  }
}

// make(IntTag<I>{}): a family's resident kernel (or launch) for a register tile of I items,
// when I is at most kMax, its largest tile; past it, an internal error naming `what` kernel.
// dispatch_items names every tile, but only tiles up to kMax are instantiated: larger ones
// would spill, and each costs compile time and code size.
template <int I, int kMax, class Make>
auto resident_or_throw(const char* op, const char* what, Make make) -> decltype(make(IntTag<std::min(I, kMax)>{})) {
  if constexpr (I > kMax)
    throw Error(std::string(op) + ": internal: no " + what + " kernel with " + std::to_string(I) + " items");
  else
    return make(IntTag<I>{});
}

// Registers per thread of `kernel` (cudaFuncGetAttributes), cached: the row layout's
// RowProblem::regs_per_thread.
inline int kernel_regs(const char* op, const void* kernel) {
  static std::mutex mutex;
  static std::map<const void*, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(kernel);
  if (it != cache.end()) return it->second;
  cudaFuncAttributes attr{};
  TACHYON_CUDA_CHECK(op, cudaFuncGetAttributes(&attr, kernel));
  cache.emplace(kernel, attr.numRegs);
  return attr.numRegs;
}

// CTAs of `kernel` that fit on one SM at this block size and dynamic shared memory; cached
// (the occupancy calculator is a host computation worth skipping on every launch).
inline int blocks_per_sm(const char* op, const void* kernel, int threads, std::size_t smem) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, std::size_t>, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(kernel, threads, smem);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  allow_dynamic_smem(op, kernel, smem);
  int blocks = 0;
  TACHYON_CUDA_CHECK(op, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
  cache.emplace(key, blocks);
  return blocks;
}

// Clusters of cfg.cluster_size CTAs of `kernel` that the whole GPU holds at once
// (query_max_active_clusters), cached like blocks_per_sm.
inline int resident_clusters(const char* op, const void* kernel, const RowConfig& cfg, std::size_t smem) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int, std::size_t>, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(kernel, cfg.cta_threads, cfg.cluster_size, smem);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  allow_dynamic_smem(op, kernel, smem);
  allow_cluster_size(op, kernel, cfg.cluster_size);
  int clusters = 0;
  TACHYON_CUDA_CHECK(op, query_max_active_clusters(&clusters, kernel, cfg.cluster_size, cfg.cta_threads, smem));
  cache.emplace(key, clusters);
  return clusters;
}

// Row groups for a persistent grid: as many as are resident at once, at most `total`.
inline long long persistent_groups(const char* op, const void* kernel, const RowConfig& cfg, std::size_t smem,
                                   long long total, int sm_count) {
  const long long resident =
      cfg.cluster_size > 1
          ? static_cast<long long>(resident_clusters(op, kernel, cfg, smem))
          : static_cast<long long>(sm_count) * std::max(1, blocks_per_sm(op, kernel, cfg.cta_threads, smem));
  return std::max(1LL, std::min(total, resident));
}

// Launches kernel<<<groups * cluster, cta_threads, smem>>> with a 1-D cluster of
// cfg.cluster_size CTAs.
template <class... Args>
void launch_rows(const char* op, void (*kernel)(Args...), const RowConfig& cfg, long long groups,
                 std::size_t smem, cudaStream_t stream, Args... args) {
  const long long blocks = groups * cfg.cluster_size;
  if (blocks > 0x7fffffffLL) throw Error(std::string(op) + ": too many rows for one launch");
  allow_dynamic_smem(op, reinterpret_cast<const void*>(kernel), smem);
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(static_cast<unsigned>(blocks));
  lc.blockDim = dim3(static_cast<unsigned>(cfg.cta_threads));
  lc.dynamicSmemBytes = smem;
  lc.stream = stream;
  cudaLaunchAttribute attr[4];
  unsigned count = 0;
  if (cfg.cluster_size > 1) {
    allow_cluster_size(op, reinterpret_cast<const void*>(kernel), cfg.cluster_size);
    attr[count++] = cluster_dim_attribute(cfg.cluster_size);
  }
  if (cfg.cluster_size > 1 && cfg.cluster_load_balancing) {
    attr[count].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    attr[count].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicyLoadBalancing;
    ++count;
  }
  if (cfg.smem_carveout >= 0) {
    attr[count].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attr[count].val.sharedMemCarveout = static_cast<unsigned>(cfg.smem_carveout);
    ++count;
  }
  if (cfg.programmatic) attr[count++] = programmatic_launch_attribute();
  lc.attrs = count > 0 ? attr : nullptr;
  lc.numAttrs = count;
  TACHYON_CUDA_CHECK(op, cudaLaunchKernelEx(&lc, kernel, args...));
  TACHYON_CHECK_LAUNCH(op);
}

}  // namespace tachyon::detail
