// Stand-ins for the CUDA runtime and the kernel launchers (the .cu files) under the validation
// fuzzer: the host sources of the library link against these instead. Every entry point that
// would touch a device counts the call in tachyon_fuzz_cuda_calls and fails as a GPU-less
// machine does, so the fuzzer sees exactly when a call got past validation, on any machine
// (no kernel is ever launched on its made-up pointers). The pure helpers return fixed values.
#include <cuda_runtime_api.h>

#include <string>

#include "core/row_config.h"
#include "elementwise/elementwise_launch.h"
#include "gemm/gemm_fallback.h"
#include "gemm/gemm_launch.h"
#include "norm/norm_params.h"
#include "softmax/softmax_params.h"
#include "tachyon/error.h"

extern "C" {
int tachyon_fuzz_cuda_calls = 0;
}

namespace {
cudaError_t no_device() {
  ++tachyon_fuzz_cuda_calls;
  return cudaErrorNoDevice;
}
[[noreturn]] void launched(const char* op) {
  ++tachyon_fuzz_cuda_calls;
  throw tachyon::Error(std::string(op) + ": CUDA error cudaErrorNoDevice (fuzz stub) from a kernel launch");
}
}  // namespace

// ---- the CUDA runtime entry points the host sources call ------------------------------------
cudaError_t CUDARTAPI cudaGetDevice(int*) { return no_device(); }
cudaError_t CUDARTAPI cudaDeviceGetAttribute(int*, cudaDeviceAttr, int) { return no_device(); }
cudaError_t CUDARTAPI cudaGetLastError(void) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaFree(void*) { return no_device(); }
const char* CUDARTAPI cudaGetErrorName(cudaError_t) { return "cudaErrorNoDevice"; }
const char* CUDARTAPI cudaGetErrorString(cudaError_t) { return "no CUDA-capable device (fuzz stub)"; }
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char*, void**, unsigned int, unsigned long long,
                                                       cudaDriverEntryPointQueryResult*) {
  return no_device();
}

// ---- the launchers and kernel queries of the .cu files -----------------------------------------
namespace tachyon::detail {

void launch_elementwise(const char* op, ElementwiseOp, DType, const ElementwiseParams&, const ElementwisePlan&,
                        cudaStream_t) {
  launched(op);
}

int norm_forward_regs(const char* op, bool, NormFwdMode, DType, bool) { launched(op); }
void launch_norm_forward(const char* op, bool, NormFwdMode, DType, const NormFwdParams&, const RowConfig&, bool, bool,
                         cudaStream_t) {
  launched(op);
}
void launch_norm_backward(const char* op, bool, bool, DType, const NormBwdParams&, const RowConfig&, long long, void*,
                          DType, void*, DType, cudaStream_t) {
  launched(op);
}
long long norm_backward_groups(const char* op, bool, bool, DType, const RowConfig&, const NormBwdParams&, long long,
                               int) {
  launched(op);
}

int softmax_forward_max_items(int) { return 8; }
int softmax_backward_max_items(int) { return 8; }
int softmax_forward_regs(const char* op, DType) { launched(op); }
void launch_softmax_forward(const char* op, bool, DType, const SoftmaxFwdParams&, const RowConfig&, cudaStream_t) {
  launched(op);
}
void launch_softmax_backward(const char* op, bool, DType, const SoftmaxBwdParams&, const RowConfig&, cudaStream_t) {
  launched(op);
}

int cross_entropy_max_items(int) { return 8; }
int cross_entropy_forward_regs(const char* op, DType) { launched(op); }
void launch_cross_entropy_forward(const char* op, DType, const CrossEntropyParams&, const RowConfig&, cudaStream_t) {
  launched(op);
}
void launch_cross_entropy_backward(const char* op, DType, const CrossEntropyBwdParams&, const RowConfig&,
                                   cudaStream_t) {
  launched(op);
}
void launch_count_targets(const char* op, const void*, bool, std::int64_t, std::int64_t, int*, cudaStream_t) {
  launched(op);
}
void launch_loss_reduce(const char* op, const float*, std::int64_t, const int*, float*, cudaStream_t) { launched(op); }
void launch_lse_combine(const char* op, const float*, std::int64_t, std::int64_t, std::int64_t, float*, cudaStream_t) {
  launched(op);
}

namespace gemm {
void launch_gemm_fallback(const char* op, DType, DType, const FallbackParams&, cudaStream_t) { launched(op); }
void launch_gemm_tma_bf16(const char* op, DType, bool, const GemmConfig&, const GemmParams&, cudaStream_t) {
  launched(op);
}
void launch_gemm_tma_f16(const char* op, DType, bool, const GemmConfig&, const GemmParams&, cudaStream_t) {
  launched(op);
}
}  // namespace gemm

}  // namespace tachyon::detail
