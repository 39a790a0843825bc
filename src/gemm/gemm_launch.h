#pragma once
// Launching the TMA/wgmma kernel: one entry point per input dtype, each defined in its own
// translation unit (gemm_tma_bf16.cu, gemm_tma_f16.cu) so the two compile in parallel.
#include <cuda_runtime_api.h>

#include "gemm/gemm_config.h"
#include "gemm/gemm_params.h"
#include "tachyon/tensor.h"

namespace tachyon::detail::gemm {

// Launches the variant for (out dtype, cfg.block_n, B layout) on cfg.ctas CTAs in clusters of
// cfg.cluster_m (fewer if fewer clusters fit on the device at once).
void launch_gemm_tma_bf16(const char* op, DType out, bool b_k_major, const GemmConfig& cfg, const GemmParams& p,
                          cudaStream_t stream);
void launch_gemm_tma_f16(const char* op, DType out, bool b_k_major, const GemmConfig& cfg, const GemmParams& p,
                         cudaStream_t stream);

}  // namespace tachyon::detail::gemm
