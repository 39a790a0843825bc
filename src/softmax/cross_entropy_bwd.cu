// Cross-entropy backward from the forward's saved lse: no reduction, so no register-resident
// row — each team sweeps its row in blocks of four chunks per thread (all loads of a block in
// flight before its stores; in place, each chunk is read and written by the same thread).
//   dlogits = g * (exp(x - lse) - eps / n - (1 - eps) onehot(t))
#include "core/host_device.h"
#include "core/row_launch.cuh"
#include "softmax/cross_entropy_common.cuh"

namespace tachyon::detail {
namespace {

__device__ __forceinline__ float load_dloss(const CrossEntropyBwdParams& p, long long row) {
  if (p.dloss == nullptr) return 1.f;
  const long long i = p.dloss_per_row ? row : 0;
  if (p.dloss_dtype == DType::f32) return static_cast<const float*>(p.dloss)[i];
  if (p.dloss_dtype == DType::bf16) return to_float(static_cast<const bf16*>(p.dloss)[i]);
  return to_float(static_cast<const half*>(p.dloss)[i]);
}

template <class T>
__global__ void __launch_bounds__(kMaxRowThreads) cross_entropy_bwd_kernel(const __grid_constant__ CrossEntropyBwdParams p) {
  constexpr int V = kVec<T>;
  constexpr int kBlock = 4;
  const RowTeam team = row_team(p);
  const long long row = team.row();
  const bool valid = row < p.rows;
  const float mean = p.count_parts ? counted_mean_scale(p.count_parts, 1.f) : 1.f;  // whole warps
  if (!valid) return;  // no barriers in this kernel
  const T* x = row_of<T>(p.logits, row);
  T* dx = mutable_row_of<T>(p.dlogits, row);
  const int off = frame_offset<T>(x);
  const int chunks = ceil_div(p.n + off, V);
  const TargetInfo tg = load_target(p.target, p.target_i64, row, p.ignore_index, p.n);
  const RowGrad g = RowGrad::from_lse(p.lse[row], tg, load_dloss(p, row) * mean, p.smoothing, p.n);
  const int stride = team.size();
  for (int j0 = team.rank(); j0 < chunks; j0 += kBlock * stride) {
    Vec<T, V> h[kBlock];
#pragma unroll
    for (int u = 0; u < kBlock; ++u) {
      const int j = j0 + u * stride;
      if (j < chunks) load_chunk<Cache::stream>(x, j * V - off, p.n, h[u], from_float<T>(0.f));
    }
#pragma unroll
    for (int u = 0; u < kBlock; ++u) {
      const int j = j0 + u * stride;
      if (j < chunks) {
        float out[V];
        g.chunk(h[u], j * V - off, out);
        store_chunk_f<Cache::stream>(dx, j * V - off, p.n, out);
      }
    }
  }
}

}  // namespace

void launch_cross_entropy_backward(const char* op, DType storage, const CrossEntropyBwdParams& p,
                                   const RowConfig& cfg, cudaStream_t stream) {
  const long long groups = ceil_div(p.rows, cfg.rows_per_cta);
  dispatch_float(op, storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_rows(op, cross_entropy_bwd_kernel<T>, cfg, groups, 0, stream, p);
  });
}

}  // namespace tachyon::detail
