#pragma once
// Elementwise operations at copy speed.
//
// Contract (every function here):
//  - Views are 1-D (n) or 2-D (rows, cols) with the inner dimension contiguous and any
//    row stride >= cols; all views have the same shape and the same dtype (f32, f16, bf16).
//  - Math is in fp32; the result is rounded once to the output dtype.
//  - `out` may be the very same memory as an input (in place); any other overlap is an Error.
//  - Sizes: any number of elements; indexing is 64-bit, so tensors past 2^31 elements work.
//  - Misaligned pointers are accepted (a correct, narrower access path); pointers must be
//    aligned to their element size.
//  - Asynchronous on `stream`; no allocation, no synchronisation: safe under graph capture.
//  - Empty tensors are a no-op. Invalid arguments throw tachyon::Error before any launch.
#include <cuda_runtime_api.h>

#include "tachyon/tensor.h"

namespace tachyon {

void add(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t stream = nullptr);
void mul(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t stream = nullptr);

void relu(const TensorView& x, const TensorView& out, cudaStream_t stream = nullptr);
void silu(const TensorView& x, const TensorView& out, cudaStream_t stream = nullptr);  // x * sigmoid(x)
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), PyTorch's gelu(approximate="tanh").
void gelu(const TensorView& x, const TensorView& out, cudaStream_t stream = nullptr);

// silu(gate) * up, the gated MLP activation of Llama-style models.
void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, cudaStream_t stream = nullptr);

}  // namespace tachyon
