#pragma once
// Host-side checks: every CUDA call and every launch goes through these, so a failure
// surfaces as a tachyon::Error naming the operation and carrying the CUDA error text.
#include <cuda_runtime_api.h>

#include <string>

#include "tachyon/error.h"

namespace tachyon::detail {

[[noreturn]] void throw_cuda_error(const char* op, const char* what, cudaError_t err);

}  // namespace tachyon::detail

#define TACHYON_CUDA_CHECK(op, expr)                                                 \
  do {                                                                               \
    cudaError_t tachyon_err_ = (expr);                                               \
    if (tachyon_err_ != cudaSuccess) ::tachyon::detail::throw_cuda_error(op, #expr, tachyon_err_); \
  } while (0)

// After a <<<>>> launch or cudaLaunchKernelEx: configuration errors show up here.
#define TACHYON_CHECK_LAUNCH(op) TACHYON_CUDA_CHECK(op, cudaGetLastError())
