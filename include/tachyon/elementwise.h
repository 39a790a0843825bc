#pragma once
// Elementwise operations at copy speed.
//
// Contract (every function here):
//  - Views are of rank 1 to 4 whose leading dimensions collapse into rows (as norm.h's x),
//    with the inner dimension contiguous and any row stride >= cols; all views have the same
//    shape and the same dtype (f32, f16, bf16). tensor.h lists the rules every view follows.
//  - Math is in fp32; the result is rounded once to the output dtype.
//  - `out` may be the very same memory as an input (in place); any other overlap is an Error.
//    An op with two outputs (swiglu_backward) may write each in place of an input; the two
//    outputs may not overlap each other.
//  - Sizes: any number of elements (rows of any length); indexing is 64-bit, so tensors past
//    2^31 elements work.
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

// ---- backward passes: the upstream gradient dy first, then the forward's inputs ---------
// PyTorch's formulas, so NaN and Inf propagate as in PyTorch's backward (x = +-Inf gives NaN).

// dx = dy * d/dx silu(x) = dy * sigmoid(x) * (1 + x * (1 - sigmoid(x)))
void silu_backward(const TensorView& dy, const TensorView& x, const TensorView& dx, cudaStream_t stream = nullptr);
// dx = dy * d/dx gelu_tanh(x)   (PyTorch's gelu(approximate="tanh") backward)
void gelu_backward(const TensorView& dy, const TensorView& x, const TensorView& dx, cudaStream_t stream = nullptr);
// y = silu(gate) * up:  dgate = dy * up * silu'(gate),  dup = dy * silu(gate); one pass, reads dy, gate, up once,
// writes both gradients.
void swiglu_backward(const TensorView& dy, const TensorView& gate, const TensorView& up, const TensorView& dgate,
                     const TensorView& dup, cudaStream_t stream = nullptr);

}  // namespace tachyon
