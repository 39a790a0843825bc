#pragma once
// RMSNorm and LayerNorm over the last dimension, forward and backward.
//
// Shapes: x is (M, N) — or any rank whose leading dimensions collapse into M rows — with
// the inner dimension contiguous and any row stride. N from 1 up: rows up to 1,048,576 bf16
// (524,288 f32) stay on chip (registers of one CTA, or of a cluster of up to 16 CTAs joined
// through distributed shared memory), so x is read from HBM once. Longer rows, up to
// N = 2^31 - 65 = 2,147,483,583 (the kernels index a row with 32 bits; longer is an Error),
// take a streaming path that reads x twice (RMSNorm) or three times (LayerNorm).
//
// Dtypes: every tensor argument may be f32, f16 or bf16 independently (e.g. an f32 weight
// with bf16 activations); math is fp32; mean / rstd are f32 vectors of M.
// Optional arguments are default-constructed (absent) TensorViews.
// NaN/Inf in a row propagate to that row's outputs as in PyTorch; other rows are untouched.
// In place (exactly the same memory, layout and dtype): y may be x or the residual,
// residual_out may be the residual or x, dx may be dy, x or dresidual. Any other overlap of an
// output (y, residual_out, mean, rstd, dx, dw, db, the workspace) with another argument is an
// Error. Scalars (eps, weight_offset) must be finite; eps >= 0.
// Asynchronous on `stream`, no allocation; invalid arguments throw tachyon::Error before any
// CUDA call (tensor.h lists the rules every view follows).
#include <cuda_runtime_api.h>

#include <cstddef>

#include "tachyon/tensor.h"

namespace tachyon {

// y = x * rsqrt(mean(x^2) + eps) * (weight + weight_offset)   (weight_offset = 1: Gemma)
// With `residual`: h = x + residual is written to residual_out (in its own dtype) and
// normalised in place of x — the pre-norm block's add + norm in one pass.
// Fastest when x, y (and residual, residual_out) share a dtype; the weight (and LayerNorm's
// bias) may have it or be fp32 beside 16-bit rows (mixed-precision training). Other dtype
// mixes take a slower general loop.
struct RmsNormForward {
  TensorView x;             // (M, N)
  TensorView weight;        // (N), optional
  TensorView residual;      // (M, N), optional
  TensorView y;             // (M, N) out
  TensorView residual_out;  // (M, N) out, required with residual
  TensorView rstd;          // (M) f32 out, optional (saved for backward)
  float eps = 1e-6f;
  float weight_offset = 0.f;
};
void rms_norm_forward(const RmsNormForward& args, cudaStream_t stream = nullptr);

// y = (x - mean) * rstd * weight + bias,  rstd = rsqrt(var + eps) (biased variance).
// The variance is accumulated from centred terms (per-thread and per-warp means merged
// pairwise), never as E[x^2] - E[x]^2: rows whose mean is large against their spread keep
// fp32 accuracy. A row with +-inf gets an infinite or NaN mean and NaN outputs, as PyTorch.
struct LayerNormForward {
  TensorView x;       // (M, N)
  TensorView weight;  // (N), optional
  TensorView bias;    // (N), optional
  TensorView y;       // (M, N) out
  TensorView mean;    // (M) f32 out, optional
  TensorView rstd;    // (M) f32 out, optional
  float eps = 1e-5f;
};
void layer_norm_forward(const LayerNormForward& args, cudaStream_t stream = nullptr);

// Backward passes. dw (and db) are reduced deterministically: per-CTA partial sums in a
// caller-provided workspace, then a fixed-order sum — two runs give identical bits. Ask
// the size with *_backward_workspace_bytes; it depends on the shapes, dtypes and requested
// outputs and on the current device (its SM count and the kernels' occupancy size the
// persistent grid), not on the pointers, so a size asked with other tensors of the same
// shapes fits. The query validates its arguments first (tachyon::Error naming the argument);
// it returns 0 without touching CUDA when no dw / db is requested or the problem is empty,
// and otherwise asks the device. A call checks its workspace before any CUDA call: present,
// 16-byte aligned, not overlapping any tensor argument, and at least one row of partials
// (N x 4 bytes per requested dw / db); that it holds the device's full size is checked once
// the device is known. Fastest when x, dy and dx share a dtype and their rows are
// whole 16-byte chunks, 16-byte aligned (N a multiple of 8 for 16-bit, of 4 for fp32), with
// no dresidual; the weight and dw / db may be of any float dtype (e.g. fp32 beside bf16).
// Other layouts are handled by a slower general loop.
struct RmsNormBackward {
  TensorView x;          // (M, N): the forward's input (h = x + residual when fused)
  TensorView weight;     // (N), optional (as in the forward)
  TensorView rstd;       // (M) f32, from the forward
  TensorView dy;         // (M, N), x's dtype; beside fp32 x any float dtype (a 16-bit y's gradient)
  TensorView dresidual;  // (M, N), optional: added to dx (gradient through residual_out)
  TensorView dx;         // (M, N) out
  TensorView dw;         // (N) out, optional (requires weight)
  float weight_offset = 0.f;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};
std::size_t rms_norm_backward_workspace_bytes(const RmsNormBackward& args);
void rms_norm_backward(const RmsNormBackward& args, cudaStream_t stream = nullptr);

struct LayerNormBackward {
  TensorView x;       // (M, N)
  TensorView weight;  // (N), optional
  TensorView mean;    // (M) f32, from the forward
  TensorView rstd;    // (M) f32, from the forward
  TensorView dy;      // (M, N), x's dtype; beside fp32 x any float dtype
  TensorView dx;      // (M, N) out
  TensorView dw;      // (N) out, optional (requires weight)
  TensorView db;      // (N) out, optional
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};
std::size_t layer_norm_backward_workspace_bytes(const LayerNormBackward& args);
void layer_norm_backward(const LayerNormBackward& args, cudaStream_t stream = nullptr);

}  // namespace tachyon
