// The non-TMA GEMM: 64 x 64 output tiles, 256 threads with 4 x 4 results each, K in steps
// of 16 staged through shared memory as fp32. Any strides, any alignment.
#include "core/check.h"
#include "core/dtype.cuh"
#include "core/host_device.h"
#include "gemm/epilogue.cuh"
#include "gemm/gemm_fallback.h"

namespace tachyon::detail::gemm {
namespace {

constexpr int kTile = 64;
constexpr int kSliceK = 16;
constexpr int kFallbackThreads = 256;

template <class InT, class OutT>
__global__ void __launch_bounds__(kFallbackThreads) gemm_fallback_kernel(const FallbackParams p) {
  __shared__ float As[kSliceK][kTile + 4];
  __shared__ float Bs[kSliceK][kTile + 4];
  const InT* a = static_cast<const InT*>(p.a);
  const InT* b = static_cast<const InT*>(p.b);
  const int tx = static_cast<int>(threadIdx.x) % 16, ty = static_cast<int>(threadIdx.x) / 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  // B stored (K, N) reads best with consecutive threads on consecutive n.
  const bool b_n_contiguous = p.b_n_stride == 1 && p.b_k_stride != 1;
  const int tiles_n = ceil_div(p.n, kTile);
  for (int tn = static_cast<int>(blockIdx.y); tn < tiles_n; tn += static_cast<int>(gridDim.y)) {
    const std::int64_t n0 = static_cast<std::int64_t>(tn) * kTile;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < p.k; k0 += kSliceK) {
#pragma unroll
      for (int i = 0; i < kTile * kSliceK / kFallbackThreads; ++i) {
        const int idx = static_cast<int>(threadIdx.x) + i * kFallbackThreads;
        {
          const int r = idx / kSliceK, kk = idx % kSliceK;
          const std::int64_t row = m0 + r;
          const int k = k0 + kk;
          As[kk][r] = (row < p.m && k < p.k) ? to_float(a[row * p.lda + k]) : 0.f;
        }
        {
          const int c = b_n_contiguous ? idx % kTile : idx / kSliceK;
          const int kk = b_n_contiguous ? idx / kTile : idx % kSliceK;
          const std::int64_t col = n0 + c;
          const int k = k0 + kk;
          Bs[kk][c] = (col < p.n && k < p.k) ? to_float(b[col * p.b_n_stride + static_cast<std::int64_t>(k) * p.b_k_stride])
                                             : 0.f;
        }
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kSliceK; ++kk) {
        float av[4], bv[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) av[i] = As[kk][ty * 4 + i];
#pragma unroll
        for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx * 4 + j];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
      __syncthreads();
    }
    OutT* d = static_cast<OutT*>(p.epi.d);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = static_cast<int>(m0) + ty * 4 + i;
      // epilogue_math's groups follow the wgmma fragment order; here one value at a time.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = static_cast<int>(n0) + tx * 4 + j;
        if (row >= p.m || col >= p.n) continue;
        float v[1] = {acc[i][j]};
        epilogue_math<OutT, 1>(v, row, col, p.epi);  // group of 1: frag_row/col(.., 0) = (row, col)
        d[static_cast<std::int64_t>(row) * p.epi.d_row_stride + static_cast<std::int64_t>(col) * p.epi.d_col_stride] =
            from_float<OutT>(v[0]);
      }
    }
  }
}

}  // namespace

void launch_gemm_fallback(const char* op, DType in, DType out, const FallbackParams& p, cudaStream_t stream) {
  const int tiles_m = ceil_div(p.m, kTile), tiles_n = ceil_div(p.n, kTile);
  dim3 grid(static_cast<unsigned>(tiles_m), static_cast<unsigned>(tiles_n < 65535 ? tiles_n : 65535));
  auto launch = [&](auto in_tag, auto out_tag) {
    using InT = typename decltype(in_tag)::type;
    using OutT = typename decltype(out_tag)::type;
    gemm_fallback_kernel<InT, OutT><<<grid, kFallbackThreads, 0, stream>>>(p);
  };
  auto with_out = [&](auto in_tag) { dispatch_float(op, out, [&](auto out_tag) { launch(in_tag, out_tag); }); };
  if (in == DType::bf16) with_out(TypeTag<bf16>{});
  else with_out(TypeTag<half>{});
  TACHYON_CHECK_LAUNCH(op);
}

}  // namespace tachyon::detail::gemm
