// TMA/wgmma GEMM kernels with bf16 inputs (every output dtype, tile width and B layout).
#include "gemm/gemm_launch.cuh"

namespace tachyon::detail::gemm {

void launch_gemm_tma_bf16(const char* op, DType out, bool b_k_major, const GemmConfig& cfg, const GemmParams& p,
                          cudaStream_t stream) {
  launch_gemm_tma<bf16>(op, out, b_k_major, cfg, p, stream);
}

}  // namespace tachyon::detail::gemm
