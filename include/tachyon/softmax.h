#pragma once
// Softmax and log-softmax over the last dimension, forward and backward.
//
// Shapes: x is (M, N) — or any rank whose leading dimensions collapse into M rows — with
// the inner dimension contiguous and any row stride (misaligned rows and odd N included).
// Rows up to 524,288 elements of a 16-bit dtype (393,216 f32) stay on chip (registers of
// one CTA, or of a cluster of up to 16 CTAs joined through distributed shared memory), so x
// is read from HBM once and y written once. Longer rows, up to N = 2^31 - 65 = 2,147,483,583
// (longer is an Error), take a streaming path that reads the row twice (an online max / sum
// pass, then the output pass).
//
// Dtypes: f32, f16, bf16; math is fp32 and each output is rounded once. The output may
// have another float dtype than the input (e.g. bf16 x, f32 y); such mixed calls take the
// two-read streaming path (rare; the same-dtype path is the fast one).
// Numerics, as PyTorch: a row with a NaN gives NaN everywhere in that row; -inf entries
// (masked logits) give 0 (log-softmax: -inf); a row of all -inf gives NaN; +inf gives NaN.
// Accuracy: f32 outputs within ~1e-6 relative; probabilities below 2^-126 flush to 0 (the
// exponential is one ex2.approx.ftz); 16-bit outputs are rounded once from fp32. Every
// exponential takes x - max first, so the accuracy holds at any magnitude of x (fp16 near
// 65504, fp32 near 1e6).
// In place: y may be x; dx may be dy or y (same layout and dtype). Any other overlap of an
// output with an input is an Error.
// Asynchronous on `stream`, no allocation; invalid arguments throw tachyon::Error before any
// CUDA call (tensor.h lists the rules every view follows).
#include <cuda_runtime_api.h>

#include "tachyon/tensor.h"

namespace tachyon {

// y = softmax(x) = exp(x - max) / sum(exp(x - max)), or with `log`:
// y = log_softmax(x) = x - max - log(sum(exp(x - max))).
struct SoftmaxForward {
  TensorView x;  // (M, N)
  TensorView y;  // (M, N) out
  bool log = false;
};
void softmax_forward(const SoftmaxForward& args, cudaStream_t stream = nullptr);

// dx = y * (dy - sum(y * dy)), or with `log` (y the log-softmax output):
// dx = dy - exp(y) * sum(dy).   Row sums over the last dimension.
struct SoftmaxBackward {
  TensorView y;   // (M, N): the forward's output
  TensorView dy;  // (M, N), same dtype as y
  TensorView dx;  // (M, N) out, any float dtype (the same as y is the fast path)
  bool log = false;
};
void softmax_backward(const SoftmaxBackward& args, cudaStream_t stream = nullptr);

}  // namespace tachyon
