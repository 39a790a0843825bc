#pragma once
// Matrix multiply with a fused epilogue, at cuBLAS speed on Hopper.
//
//   D = act(alpha * A B^T + beta * C + bias)
//
// Contract:
//  - A is (M, K) with K contiguous; leading dimensions of A, C and D collapse into M, so a
//    (batch, seq, hidden) activation is accepted as it is.
//  - B is (N, K) with K contiguous (BLayout::nk, a `Linear` weight: D = A W^T), or (K, N)
//    with N contiguous (BLayout::kn: D = A B). B is 2-D.
//  - A and B: bf16 or f16, the same dtype. D: f32, f16 or bf16. Accumulation is fp32; the
//    epilogue math is fp32; D is rounded once.
//  - C (optional): D's shape and dtype; read only when beta != 0 (then it is required). It may
//    be the very same memory as D (in-place D = A B^T + D); any other overlap is an Error.
//  - bias (optional): N values (f32, f16 or bf16), added per column.
//  - activation: none, relu, silu (x sigmoid(x)), gelu_tanh (PyTorch's approximate="tanh").
//  - D may not overlap A, B or bias (nor C, except as exactly C).
//  - alpha and beta must be finite (NaN or +-inf is an Error, as every op's float scalars).
//  - Any M, N, K >= 0, each at most 2^31 - 65 = 2,147,483,583 (a larger one is an Error that
//    names the argument it comes from: M and K a, N b). M = 0 or N = 0: no-op.
//    K = 0: D = act(beta C + bias).
//
// Which path a call takes (both give the same results to fp32 rounding):
//  - The TMA/wgmma kernel (persistent, warp-specialised, 2-CTA clusters with TMA multicast)
//    when A and B have 16-byte aligned base pointers and row strides that are multiples of
//    16 bytes (bf16/f16: K a multiple of 8 for contiguous (M, K) and (N, K); N a multiple of 8
//    for a contiguous (K, N) B). Its output goes through shared memory and TMA stores when D
//    meets the same rule (N a multiple of 8 for bf16/f16, of 4 for f32), else through direct
//    stores. Small M (<= 64) may run as D^T = B A^T, which needs BLayout::nk.
//  - A slower SIMT fallback for everything else (e.g. K = 1, 127, 129, 4099 with bf16, odd
//    base pointers, K = 0): correct for any strides and alignment.
//  - The TMA/wgmma path requires an sm_90 GPU; the call throws tachyon::Error on other devices.
//
//  - Asynchronous on `stream`; no allocation, no synchronisation: safe under graph capture.
//    Tensor maps are encoded on the host and cached by (pointer, shape, stride).
//  - Invalid arguments throw tachyon::Error naming the argument, before any CUDA call.
#include <cuda_runtime_api.h>

#include "tachyon/tensor.h"

namespace tachyon {

enum class Activation { none, relu, silu, gelu_tanh };

enum class BLayout {
  nk,  // B is (N, K), K contiguous: a Linear weight, D = A B^T
  kn,  // B is (K, N), N contiguous: D = A B
};

struct GemmArgs {
  TensorView a;     // (M, K)
  TensorView b;     // (N, K) or (K, N), see b_layout
  TensorView d;     // (M, N) output
  TensorView c;     // optional (M, N), read when beta != 0
  TensorView bias;  // optional (N)
  BLayout b_layout = BLayout::nk;
  float alpha = 1.f;
  float beta = 0.f;
  Activation activation = Activation::none;
};

void gemm(const GemmArgs& args, cudaStream_t stream = nullptr);

// D = A B^T for a Linear weight B (N, K): the common case in one line.
inline void gemm(const TensorView& a, const TensorView& b, const TensorView& d, cudaStream_t stream = nullptr) {
  GemmArgs args;
  args.a = a;
  args.b = b;
  args.d = d;
  gemm(args, stream);
}

}  // namespace tachyon
