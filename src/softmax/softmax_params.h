#pragma once
// Kernel parameters of the softmax / cross-entropy family, shared by the host entry points
// (softmax.cpp, cross_entropy.cpp) and the kernels. Plain data: passed as __grid_constant__.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/row_arg.h"
#include "core/row_config.h"
#include "tachyon/tensor.h"

namespace tachyon::detail {

struct SoftmaxFwdParams {
  RowArg x, y;
  std::int64_t rows = 0;
  int n = 0;
  bool log = false;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
};

struct SoftmaxBwdParams {
  RowArg y, dy, dx;  // y and dy share the storage dtype
  std::int64_t rows = 0;
  int n = 0;
  bool log = false;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
};

// Non-ignored row count, as per-CTA partial counts (summed by each consumer warp).
inline constexpr int kCountParts = 128;

struct CrossEntropyParams {
  RowArg logits, dlogits;  // dlogits: same dtype as logits; data null = no gradient
  const void* target = nullptr;
  bool target_i64 = false;
  float* loss = nullptr;       // (M) f32: the loss output (none) or the workspace rows (sum, mean)
  float* lse_out = nullptr;    // (M) f32, optional
  const int* count_parts = nullptr;  // mean: kCountParts partial counts; null otherwise
  float grad_scale = 1.f;      // grad_output (divided by the count for mean)
  std::int64_t ignore_index = -100;
  float smoothing = 0.f;
  std::int64_t rows = 0;
  int n = 0;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
};

struct CrossEntropyBwdParams {
  RowArg logits, dlogits;
  const void* target = nullptr;
  bool target_i64 = false;
  const float* lse = nullptr;
  const void* dloss = nullptr;  // null: 1
  DType dloss_dtype = DType::f32;
  bool dloss_per_row = false;   // reduction none: dloss[row]; else dloss[0]
  const int* count_parts = nullptr;  // mean
  std::int64_t ignore_index = -100;
  float smoothing = 0.f;
  std::int64_t rows = 0;
  int n = 0;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
};

// Largest register tile (chunks per thread) of each resident kernel, by storage dtype size.
int softmax_forward_max_items(int elem_bytes);
int softmax_backward_max_items(int elem_bytes);
int cross_entropy_max_items(int elem_bytes);
// Registers per thread of the resident forward kernels at the 8-chunk target tile
// (RowProblem::regs_per_thread).
int softmax_forward_regs(const char* op, DType storage);
int cross_entropy_forward_regs(const char* op, DType storage);

// The cross-entropy forward's layout (pure: CPU-tested). Rows a 512-thread team holds stay
// resident; with the gradient, longer rows too, on a cluster. Where choose_row_config's layout
// leaves at most two CTAs an SM, whose rows' loads all wait at each reduction together, they
// take 256-thread CTAs and clusters instead, up to kCrossEntropyNarrowCtas CTAs (16 would leave
// 20 of the 132 SMs idle: docs/perf.md#16-cta-clusters-reach-112-of-132-sms). The loss alone of
// a longer row streams (choose_stream_config). docs/perf/cross_entropy.md#cross-entropy-forward
inline constexpr int kCrossEntropyNarrowCtas = 8;
RowConfig cross_entropy_row_config(RowProblem prob, bool gradient, std::int64_t rows, int sm_count);

// typed: the output has the storage dtype (else the streaming kernel with run-time dtypes).
void launch_softmax_forward(const char* op, bool typed, DType storage, const SoftmaxFwdParams& p,
                            const RowConfig& cfg, cudaStream_t stream);
void launch_softmax_backward(const char* op, bool typed, DType storage, const SoftmaxBwdParams& p,
                             const RowConfig& cfg, cudaStream_t stream);
void launch_cross_entropy_forward(const char* op, DType storage, const CrossEntropyParams& p, const RowConfig& cfg,
                                  cudaStream_t stream);
void launch_cross_entropy_backward(const char* op, DType storage, const CrossEntropyBwdParams& p,
                                   const RowConfig& cfg, cudaStream_t stream);

// Small kernels (cross_entropy_aux.cu).
// parts[b] = rows of block b's range whose target != ignore_index (kCountParts blocks).
void launch_count_targets(const char* op, const void* target, bool target_i64, std::int64_t rows,
                          std::int64_t ignore_index, int* parts, cudaStream_t stream);
// out[0] = sum of row_loss (fixed order), divided by the count from parts when non-null.
void launch_loss_reduce(const char* op, const float* row_loss, std::int64_t rows, const int* parts, float* out,
                        cudaStream_t stream);
void launch_lse_combine(const char* op, const float* partial, std::int64_t shards, std::int64_t row_stride,
                        std::int64_t m, float* out, cudaStream_t stream);

}  // namespace tachyon::detail
