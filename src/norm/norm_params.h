#pragma once
// Kernel parameters of the norm family, shared by the host entry points (norm.cpp) and the
// kernels (norm_fwd.cu, norm_bwd.cu). Plain data: passed by value as __grid_constant__.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/row_arg.h"
#include "core/row_config.h"
#include "tachyon/tensor.h"

namespace tachyon::detail {

struct NormFwdParams {
  RowArg x, residual, residual_out, y;  // residual_out (when fused) has the storage dtype
  RowArg weight, bias;                  // vectors: stride unused
  float* mean = nullptr;
  float* rstd = nullptr;
  std::int64_t rows = 0;
  int n = 0;
  float eps = 0.f, weight_offset = 0.f;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
  bool stage_operands = false;  // weight / bias staged in dynamic shared memory (set by the launcher)
};

struct NormBwdParams {
  RowArg x, dy, dresidual, dx;
  RowArg weight;
  const float* mean = nullptr;  // LayerNorm only
  const float* rstd = nullptr;
  float* dw_partial = nullptr;  // [groups][n] f32, or null when dw is not wanted
  float* db_partial = nullptr;  // [groups][n] f32, LayerNorm, or null
  std::int64_t rows = 0;
  int n = 0;
  float weight_offset = 0.f;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
};

// The forward kernel's build for a call (norm_fwd.cu has the details):
//  whole   - every operand of the storage dtype, rows and vectors of whole aligned 16-byte
//            chunks, weight (and LayerNorm's bias) present, no residual;
//  typed   - every operand of the storage dtype, anything else;
//  generic - any mix of dtypes;
//  whole_cluster - the whole build bounded to 64 registers (two 512-thread CTAs per SM), for
//            rows that take a cluster: there CTAs must overlap one another's exchanges.
enum class NormFwdMode { generic, typed, whole, whole_cluster };

// The build for a whole-chunk row once its config is known: whole_cluster (bounded to 64
// registers) for cluster rows where the unbounded build leaves too few CTAs per SM to overlap
// one another's exchanges: LayerNorm (more registers and work a row), the widest cluster, 512-thread
// CTAs. Any other mode or config: unchanged. A pure function (CPU tests); measurements in
// norm.cpp and docs/perf.md.
NormFwdMode forward_mode_for_config(NormFwdMode mode, const RowConfig& cfg, bool layer_norm, int max_cluster);

// Largest register tile (chunks per thread) the kernels are built for, by storage dtype size.
int norm_forward_max_items(int elem_bytes, bool layer_norm, NormFwdMode mode);
// Registers per thread of the resident forward kernel at the 8-chunk target tile (for
// RowProblem::regs_per_thread), from cudaFuncGetAttributes, cached.
int norm_forward_regs(const char* op, bool layer_norm, NormFwdMode mode, DType storage);

// The backward keeps x and dy in registers, 4 chunks a thread (2 while one CTA holds the row).
// fp32 rows that would take a cluster of 4 or more CTAs at 4 chunks take 8 (fp32 16384 and
// up; the column sums and weight factors in shared memory): measured (x copy, one run) RMSNorm
// 16k / 32k / 65k / 131k 0.912 / 0.899 / 0.869 / 0.852 -> 0.926 / 0.910 / 0.898 / 0.874,
// LayerNorm 16k / 131k 0.877 / 0.793 -> 0.904 / 0.809; at 8192 (2 CTAs) RMSNorm lost 0.8 %,
// and 16-bit rows lost 0-25 % (twice the shared memory a thread). Rows past 131072 fp32 that
// 4 chunks cannot hold at all take it before the streaming kernel, which reads x and dy twice
// (fp32 262144: 0.41 -> 0.88). Pure (CPU tests); `prob` as row_problem gives it.
inline constexpr int kBackwardItems = 4;
inline constexpr int kBackwardLongRowItems = 8;  // fp32 storage only (kMaxBackwardItems)
RowConfig backward_row_config(RowProblem prob);

// Host launchers (defined in the .cu files). `storage` is the dtype kept in registers.
void launch_norm_forward(const char* op, bool layer_norm, NormFwdMode mode, DType storage, const NormFwdParams& p,
                         const RowConfig& cfg, cudaStream_t stream);
// Runs the backward over `groups` row groups (persistent), then, when dw/db partials are
// requested, the fixed-order column sum into dw / db.
// typed: x, dy, dx, weight all of the storage dtype, no dresidual.
void launch_norm_backward(const char* op, bool layer_norm, bool typed, DType storage, const NormBwdParams& p,
                          const RowConfig& cfg, long long groups, void* dw, DType dw_dtype, void* db,
                          DType db_dtype, cudaStream_t stream);

// CTAs of the backward kernel that fit on one SM (occupancy), for sizing its persistent grid.
// Row groups of the persistent backward grid: all resident at once (cluster-aware), at most
// `total`. `p` tells which column sums are kept (dw_partial / db_partial non-null) and n.
long long norm_backward_groups(const char* op, bool layer_norm, bool typed, DType storage, const RowConfig& cfg,
                               const NormBwdParams& p, long long total, int sm_count);

}  // namespace tachyon::detail
