// Elementwise kernels: one templated kernel for every op, dtype, arity (1 to 3 inputs) and
// number of outputs (1 or 2). Validation and the plan: elementwise.cpp.
#include <utility>

#include "core/check.h"
#include "core/dtype.cuh"
#include "core/vec.cuh"
#include "elementwise/elementwise_launch.h"
#include "elementwise/ops.cuh"

namespace tachyon::detail {
namespace {

constexpr int kMaxInputs = kMaxElementwiseInputs;
constexpr int kMaxOutputs = kMaxElementwiseOutputs;

// Element e of every input through the functor into element e of every output.
template <class Op, int A, int O, int V, int... I>
__device__ __forceinline__ void apply_op(const float (&x)[A][V], float (&y)[O][V], int e,
                                         std::integer_sequence<int, I...>) {
  if constexpr (O == 1) {
    y[0][e] = Op{}(x[I][e]...);
  } else {
    const Results2 r = Op{}(x[I][e]...);
    y[0][e] = r.first;
    y[1][e] = r.second;
  }
}

// Each thread owns kUnroll chunks spaced blockDim.x apart (coalesced across the warp),
// issues every load before the first use, then computes and stores.
// Chunks sit in the first output's row frame. Every other tensor (inputs, a second output)
// is accessed at the same columns: where its row sits elsewhere in its 16-byte segment,
// load_chunk / store_chunk see the misaligned address and take the element-by-element path
// for it (correct, narrower), exactly as for an input aligned differently from the output.
template <class Op, class T, int kUnroll>
__global__ void __launch_bounds__(256, 3) elementwise_kernel(const ElementwiseParams p) {
  constexpr int V = kVec<T>;
  constexpr int A = Op::kArity;
  constexpr int O = Op::kOutputs;
  static_assert(A >= 1 && A <= kMaxInputs && O >= 1 && O <= kMaxOutputs, "1 to 3 inputs, 1 or 2 outputs");
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;

  Vec<T, V> in[A][kUnroll];
  std::int64_t c0[kUnroll], row[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    std::int64_t g = first + static_cast<std::int64_t>(u) * blockDim.x;
    std::int64_t r = 0, j = g;
    if (p.rows > 1) {  // uniform branch: a flat tensor never divides
      r = g / p.chunks_per_row;
      j = g - r * p.chunks_per_row;
    }
    row[u] = g < p.total_chunks ? r : -1;
    const T* orow = static_cast<const T*>(p.out[0]) + r * p.out_stride[0];
    c0[u] = j * V - frame_offset<T>(orow);
#pragma unroll
    for (int a = 0; a < A; ++a) {
      if (row[u] >= 0 && c0[u] < p.cols) {
        const T* irow = static_cast<const T*>(p.in[a]) + r * p.in_stride[a];
        load_chunk<Cache::stream>(irow, c0[u], p.cols, in[a][u], T{});
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (row[u] < 0 || c0[u] >= p.cols) continue;
    float x[A][V], y[O][V];
#pragma unroll
    for (int a = 0; a < A; ++a) to_floats(in[a][u], x[a]);
#pragma unroll
    for (int e = 0; e < V; ++e) apply_op<Op>(x, y, e, std::make_integer_sequence<int, A>{});
#pragma unroll
    for (int o = 0; o < O; ++o) {
      T* orow = static_cast<T*>(p.out[o]) + row[u] * p.out_stride[o];
      store_chunk_f<Cache::stream>(orow, c0[u], p.cols, y[o]);
    }
  }
}

template <class Op>
constexpr int kChunksPerThread = elementwise_chunks_per_thread(Op::kArity);

template <class Op>
void run_kernel(const char* op, DType dtype, const ElementwiseParams& p, const ElementwisePlan& plan,
                cudaStream_t stream) {
  constexpr int kUnroll = kChunksPerThread<Op>;
  if (plan.chunks_per_thread != kUnroll) throw Error(std::string(op) + ": internal: elementwise plan mismatch");
  dispatch_float(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise_kernel<Op, T, kUnroll><<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(p);
  });
  TACHYON_CHECK_LAUNCH(op);
}

}  // namespace

void launch_elementwise(const char* op, ElementwiseOp kind, DType dtype, const ElementwiseParams& p,
                        const ElementwisePlan& plan, cudaStream_t stream) {
  switch (kind) {
    case ElementwiseOp::add: return run_kernel<AddOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::mul: return run_kernel<MulOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::relu: return run_kernel<ReluOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::silu: return run_kernel<SiluOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::gelu: return run_kernel<GeluTanhOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::swiglu: return run_kernel<SwigluOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::silu_backward: return run_kernel<SiluBackwardOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::gelu_backward: return run_kernel<GeluTanhBackwardOp>(op, dtype, p, plan, stream);
    case ElementwiseOp::swiglu_backward: return run_kernel<SwigluBackwardOp>(op, dtype, p, plan, stream);
  }
  throw Error(std::string(op) + ": internal: unknown elementwise op");
}

}  // namespace tachyon::detail
