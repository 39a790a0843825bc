#pragma once
// The variant table and launch of the TMA/wgmma kernel for one input dtype. Included once by
// each gemm_tma_<dtype>.cu, which is where the kernels are instantiated: per input dtype,
// 3 output dtypes x {128x256, 128x128} x {B (N,K), B (K,N)} + 128x64 with B (N,K).
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>

#include "core/check.h"
#include "core/launch.h"
#include "gemm/gemm_kernel.cuh"
#include "gemm/gemm_launch.h"

namespace tachyon::detail::gemm {

// How many clusters of `cluster` CTAs with `smem` bytes each fit on the device at once, per
// (kernel, device, cluster size); 0 when the query fails. Cached: the answer never changes.
template <class Kernel>
int max_active_clusters(Kernel kernel, int cluster, std::size_t smem, int device) {
  static std::atomic<int> cache[64][3];
  if (device < 0 || device >= 64 || cluster < 1 || cluster > 2) return 0;
  int v = cache[device][cluster].load(std::memory_order_relaxed);
  if (v != 0) return v > 0 ? v : 0;
  int n = 0;
  if (query_max_active_clusters(&n, reinterpret_cast<const void*>(kernel), cluster, kThreads, smem) != cudaSuccess ||
      n <= 0) {
    cudaGetLastError();  // clear the sticky-free error so the launch check does not see it
    n = -1;
  }
  cache[device][cluster].store(n, std::memory_order_relaxed);
  return n > 0 ? n : 0;
}

template <class InT, class OutT, int BN, bool kBKMajor>
void launch_variant(const char* op, const GemmConfig& cfg, const GemmParams& p, cudaStream_t stream) {
  auto kernel = gemm_tma_kernel<InT, OutT, BN, kBKMajor>;
  int device = 0;
  TACHYON_CUDA_CHECK(op, cudaGetDevice(&device));
  allow_dynamic_smem(op, reinterpret_cast<const void*>(kernel), cfg.smem_bytes);
  int ctas = cfg.ctas;
  const int fit = max_active_clusters(kernel, cfg.cluster_m, cfg.smem_bytes, device);
  if (fit > 0 && ctas > fit * cfg.cluster_m) ctas = gemm_persistent_ctas(cfg.units, cfg.cluster_m, fit);

  cudaLaunchConfig_t lc = {};
  lc.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
  lc.blockDim = dim3(kThreads, 1, 1);
  lc.dynamicSmemBytes = cfg.smem_bytes;
  lc.stream = stream;
  cudaLaunchAttribute attr[1] = {cluster_dim_attribute(cfg.cluster_m)};
  lc.attrs = attr;
  lc.numAttrs = 1;
  TACHYON_CUDA_CHECK(op, cudaLaunchKernelEx(&lc, kernel, p));
}

template <class InT, class OutT>
void launch_for_out(const char* op, bool b_k_major, const GemmConfig& cfg, const GemmParams& p, cudaStream_t stream) {
  if (b_k_major) {
    switch (cfg.block_n) {
      case 256: return launch_variant<InT, OutT, 256, true>(op, cfg, p, stream);
      case 128: return launch_variant<InT, OutT, 128, true>(op, cfg, p, stream);
      case 64: return launch_variant<InT, OutT, 64, true>(op, cfg, p, stream);
      default: break;
    }
  } else {
    switch (cfg.block_n) {
      case 256: return launch_variant<InT, OutT, 256, false>(op, cfg, p, stream);
      case 128: return launch_variant<InT, OutT, 128, false>(op, cfg, p, stream);
      default: break;
    }
  }
  throw Error(std::string(op) + ": no kernel variant for tile width " + std::to_string(cfg.block_n) +
              (b_k_major ? "" : " with B stored (K, N)"));
}

template <class InT>
void launch_gemm_tma(const char* op, DType out, bool b_k_major, const GemmConfig& cfg, const GemmParams& p,
                     cudaStream_t stream) {
  switch (out) {
    case DType::f32: return launch_for_out<InT, float>(op, b_k_major, cfg, p, stream);
    case DType::f16: return launch_for_out<InT, half>(op, b_k_major, cfg, p, stream);
    case DType::bf16: return launch_for_out<InT, bf16>(op, b_k_major, cfg, p, stream);
    default: throw Error(std::string(op) + ": output dtype " + dtype_name(out) + " has no kernel");
  }
}

}  // namespace tachyon::detail::gemm
