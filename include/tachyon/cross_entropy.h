#pragma once
// Cross-entropy over the last dimension of logits (M, N), forward, fused forward + gradient,
// backward from the saved lse, and the combine of per-shard lse for split vocabularies.
//
// Shapes: logits is (M, N) — or any rank whose leading dimensions collapse into M rows —
// with the inner dimension contiguous and any row stride (misaligned rows, odd N). Rows up
// to 524,288 logits of a 16-bit dtype (393,216 f32) are read from HBM once, also when the
// gradient is written in the same pass; longer rows (1,048,576 and up), to N = 2^31 - 65 =
// 2,147,483,583 (longer is an Error), take a streaming path that reads the row once more for
// the gradient.
// target: (M) int32 or int64, contiguous. lse, per-row loss: (M) f32. One-element vectors
// (a reduced loss, a scalar dloss) may be of any rank, 0 included.
//
// Per row, with lse = log(sum(exp(logits))) and t = target[row], eps = label_smoothing:
//   loss = (1 - eps) * (lse - logits[t]) + eps * (lse - mean(logits))   (PyTorch semantics)
//   dlogits = g * (softmax(logits) - (1 - eps) * onehot(t) - eps / N)
// where g is the incoming gradient of that row's loss (grad_output; for reduction mean
// divided by the number of rows whose target is not ignore_index).
//  - target == ignore_index: loss 0 and a zero gradient row (lse is still written).
//  - target outside [0, N) and not ignore_index: no out-of-bounds access; that row's loss
//    is NaN and its gradient row is NaN (PyTorch raises a device assert instead). Such rows
//    count as non-ignored for the mean.
//  - NaN in a row gives NaN loss / lse / gradient for that row; -inf logits (masked) are
//    fine; a row of all -inf gives NaN loss (lse = -inf); label smoothing with a -inf logit
//    gives loss +inf, as in PyTorch.
// Reductions: none writes loss (M); sum and mean write loss (1), summed in a fixed order on
// the device (deterministic, no float atomics). Mean over the non-ignored rows; 0/0 = NaN
// when every row is ignored. sum / mean and the mean-scaled gradient need a workspace:
// ask its size with cross_entropy_*_workspace_bytes (0 when none is needed).
// dlogits has the logits' dtype and shape; it may be the logits themselves (in place). Any
// other overlap of an output (loss, lse, dlogits, the workspace) with another argument (the
// target included) is an Error. Scalars: label_smoothing in [0, 1], grad_output finite;
// ignore_index any value.
// Math is fp32; every exponential takes x - max first (accurate at any logit magnitude).
// Asynchronous on `stream`, no allocation; invalid arguments throw tachyon::Error before any
// CUDA call (tensor.h lists the rules every view follows).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "tachyon/tensor.h"

namespace tachyon {

enum class Reduction { none, sum, mean };

struct CrossEntropyForward {
  TensorView logits;   // (M, N) f32 / f16 / bf16
  TensorView target;   // (M) i32 or i64
  TensorView loss;     // out, f32: (M) for Reduction::none, 1 element for sum / mean
  TensorView lse;      // (M) f32 out, optional (saved for cross_entropy_backward)
  TensorView dlogits;  // (M, N) out, optional: the fused gradient, written in the same pass
  Reduction reduction = Reduction::mean;
  std::int64_t ignore_index = -100;
  float label_smoothing = 0.f;  // in [0, 1]
  float grad_output = 1.f;      // the incoming gradient of the (reduced) loss, for dlogits
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};
std::size_t cross_entropy_forward_workspace_bytes(const CrossEntropyForward& args);
void cross_entropy_forward(const CrossEntropyForward& args, cudaStream_t stream = nullptr);

// dlogits from the forward's saved lse: one read of the logits, one write of dlogits.
struct CrossEntropyBackward {
  TensorView logits;   // (M, N)
  TensorView target;   // (M) i32 or i64
  TensorView lse;      // (M) f32, from the forward
  TensorView dloss;    // incoming gradient, float: (M) for none, 1 element for sum / mean;
                       // optional (absent = 1)
  TensorView dlogits;  // (M, N) out, the logits' dtype; may be the logits (in place)
  Reduction reduction = Reduction::mean;
  std::int64_t ignore_index = -100;
  float label_smoothing = 0.f;
  void* workspace = nullptr;  // Reduction::mean only (the non-ignored row count)
  std::size_t workspace_bytes = 0;
};
std::size_t cross_entropy_backward_workspace_bytes(const CrossEntropyBackward& args);
void cross_entropy_backward(const CrossEntropyBackward& args, cudaStream_t stream = nullptr);

// Large vocabularies split into S shards (GPUs or chunks): lse = log(sum_s exp(partial[s])),
// per row. partial: (S, M) f32, any row stride; lse: (M) f32 out. Shards at -inf (no
// logits, or all masked) contribute nothing; all shards -inf gives -inf; +inf gives +inf;
// NaN gives NaN.
struct LseCombine {
  TensorView partial;  // (S, M) f32
  TensorView lse;      // (M) f32 out
};
void lse_combine(const LseCombine& args, cudaStream_t stream = nullptr);

}  // namespace tachyon
