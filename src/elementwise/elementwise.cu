// Elementwise kernels: one templated kernel for every op, dtype and arity.
#include "core/check.h"
#include "core/dtype.cuh"
#include "core/validate.h"
#include "core/vec.cuh"
#include "elementwise/elementwise_plan.h"
#include "elementwise/ops.cuh"
#include "tachyon/elementwise.h"

namespace tachyon::detail {
namespace {

struct ElementwiseParams {
  std::int64_t rows, cols, chunks_per_row, total_chunks;
  const void* in[2];
  std::int64_t in_stride[2];  // elements
  void* out;
  std::int64_t out_stride;
};

// Each thread owns kUnroll chunks spaced blockDim.x apart (coalesced across the warp),
// issues every load before the first use, then computes and stores.
template <class Op, class T, int kUnroll>
__global__ void __launch_bounds__(256, 3) elementwise_kernel(const ElementwiseParams p) {
  constexpr int V = kVec<T>;
  constexpr int A = Op::kArity;
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
    const T* orow = static_cast<const T*>(p.out) + r * p.out_stride;
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
    float x[A][V], y[V];
#pragma unroll
    for (int a = 0; a < A; ++a) to_floats(in[a][u], x[a]);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if constexpr (A == 1) y[e] = Op{}(x[0][e]);
      else y[e] = Op{}(x[0][e], x[1][e]);
    }
    T* orow = static_cast<T*>(p.out) + row[u] * p.out_stride;
    store_chunk_f<Cache::stream>(orow, c0[u], p.cols, y);
  }
}

// The kernel indexes columns with 64 bits: rows (and flat tensors) of any length.
constexpr std::int64_t kNoColumnLimit = 0x7fffffffffffffffLL;

template <class Op>
void run_elementwise(const char* op, const char* const* names, const TensorView* const* inputs,
                     const TensorView& out, cudaStream_t stream) {
  constexpr int A = Op::kArity;
  Rows in_rows[A];
  for (int a = 0; a < A; ++a) {
    check_dtype(op, names[a], *inputs[a], {DType::f32, DType::f16, DType::bf16});
    in_rows[a] = as_rows(op, names[a], *inputs[a], kNoColumnLimit);
    if (a > 0) {
      check_same_dtype(op, names[a], *inputs[a], names[0], *inputs[0]);
      check_same_shape(op, names[a], *inputs[a], names[0], *inputs[0]);
    }
  }
  check_same_dtype(op, "out", out, names[0], *inputs[0]);
  check_same_shape(op, "out", out, names[0], *inputs[0]);
  Rows out_rows = as_rows(op, "out", out, kNoColumnLimit);
  for (int a = 0; a < A; ++a) check_no_overlap(op, "out", out_rows, names[a], in_rows[a], /*allow_same=*/true);
  if (out_rows.numel() == 0) return;

  // A dense tensor is one long row: no per-chunk division, one frame.
  bool flat = out_rows.row_stride == out_rows.cols;
  for (int a = 0; a < A; ++a) flat = flat && in_rows[a].row_stride == in_rows[a].cols;
  ElementwiseParams p{};
  p.rows = flat ? 1 : out_rows.rows;
  p.cols = flat ? out_rows.numel() : out_rows.cols;
  p.out = out_rows.data;
  p.out_stride = flat ? 0 : out_rows.row_stride;
  for (int a = 0; a < A; ++a) {
    p.in[a] = in_rows[a].data;
    p.in_stride[a] = flat ? 0 : in_rows[a].row_stride;
  }
  const int esize = static_cast<int>(out_rows.elem_bytes());
  const int vec = 16 / esize;
  const int max_off = (p.rows == 1 || out_rows.rows_aligned(16))
                          ? static_cast<int>((reinterpret_cast<std::uintptr_t>(p.out) & 15u) / esize)
                          : vec - 1;
  ElementwisePlan plan = plan_elementwise(p.rows, p.cols, vec, max_off);
  p.chunks_per_row = plan.chunks_per_row;
  p.total_chunks = plan.total_chunks;
  if (plan.blocks > 0x7fffffffLL) fail(op, "out", "too many elements for one launch: " + out.str());

  dispatch_float(op, out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise_kernel<Op, T, 4><<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(p);
  });
  TACHYON_CHECK_LAUNCH(op);
}

template <class Op>
void unary(const char* op, const TensorView& x, const TensorView& out, cudaStream_t stream) {
  const char* names[] = {"x"};
  const TensorView* inputs[] = {&x};
  run_elementwise<Op>(op, names, inputs, out, stream);
}

template <class Op>
void binary(const char* op, const char* name_a, const TensorView& a, const char* name_b, const TensorView& b,
            const TensorView& out, cudaStream_t stream) {
  const char* names[] = {name_a, name_b};
  const TensorView* inputs[] = {&a, &b};
  run_elementwise<Op>(op, names, inputs, out, stream);
}

}  // namespace
}  // namespace tachyon::detail

namespace tachyon {
using namespace detail;

// Registration: one line per op.
void add(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t s) { binary<AddOp>("add", "a", a, "b", b, out, s); }
void mul(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t s) { binary<MulOp>("mul", "a", a, "b", b, out, s); }
void relu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary<ReluOp>("relu", x, out, s); }
void silu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary<SiluOp>("silu", x, out, s); }
void gelu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary<GeluTanhOp>("gelu", x, out, s); }
void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, cudaStream_t s) { binary<SwigluOp>("swiglu", "gate", gate, "up", up, out, s); }

}  // namespace tachyon
