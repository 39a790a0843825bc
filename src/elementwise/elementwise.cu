// Elementwise kernels: one templated kernel for every op, dtype, arity (1 to 3 inputs) and
// number of outputs (1 or 2).
#include <utility>

#include "core/check.h"
#include "core/dtype.cuh"
#include "core/validate.h"
#include "core/vec.cuh"
#include "elementwise/elementwise_plan.h"
#include "elementwise/ops.cuh"
#include "tachyon/elementwise.h"

namespace tachyon::detail {
namespace {

constexpr int kMaxInputs = 3;
constexpr int kMaxOutputs = 2;

struct ElementwiseParams {
  std::int64_t rows, cols, chunks_per_row, total_chunks;
  const void* in[kMaxInputs];
  std::int64_t in_stride[kMaxInputs];  // elements
  void* out[kMaxOutputs];
  std::int64_t out_stride[kMaxOutputs];  // elements
};

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

// Chunks each thread keeps in flight (the kernel's kUnroll): the plan's 4 for one or two
// inputs; 3 for three inputs, 144 bytes a thread in flight (two inputs: 128) in the 80
// registers that 3 CTAs an SM allow. (swiglu_backward, H200, 2^28 elements: 4 chunks spilled
// at 16 bits, 0.99-1.03x copy; 4 chunks at 2 CTAs an SM 0.91x; 3 chunks 1.02-1.04x.)
template <class Op>
constexpr int kChunksPerThread = Op::kArity > 2 ? 3 : 4;

// The kernel indexes columns with 64 bits: rows (and flat tensors) of any length.
constexpr std::int64_t kNoColumnLimit = 0x7fffffffffffffffLL;

// The named operands of one call: inputs first (the reference for dtype and shape is
// inputs[0]), then the outputs.
struct Operands {
  int arity, outputs;
  const char* const* in_names;
  const TensorView* const* inputs;
  const char* const* out_names;
  const TensorView* const* outs;
};

// Validates every operand (all before any CUDA call) and fills the kernel's parameters and
// launch plan for `chunks_per_thread` chunks a thread. False for an empty problem: nothing to
// launch. Not a template: one copy of the host code for every op.
bool prepare_elementwise(const char* op, const Operands& args, int chunks_per_thread, ElementwiseParams& p,
                         ElementwisePlan& plan) {
  Rows in_rows[kMaxInputs], out_rows[kMaxOutputs];
  for (int a = 0; a < args.arity; ++a) {
    check_dtype(op, args.in_names[a], *args.inputs[a], {DType::f32, DType::f16, DType::bf16});
    in_rows[a] = as_rows(op, args.in_names[a], *args.inputs[a], kNoColumnLimit);
    if (a > 0) {
      check_same_dtype(op, args.in_names[a], *args.inputs[a], args.in_names[0], *args.inputs[0]);
      check_same_shape(op, args.in_names[a], *args.inputs[a], args.in_names[0], *args.inputs[0]);
    }
  }
  for (int o = 0; o < args.outputs; ++o) {
    check_same_dtype(op, args.out_names[o], *args.outs[o], args.in_names[0], *args.inputs[0]);
    check_same_shape(op, args.out_names[o], *args.outs[o], args.in_names[0], *args.inputs[0]);
    out_rows[o] = as_rows(op, args.out_names[o], *args.outs[o], kNoColumnLimit);
  }
  // An output may be exactly an input (in place): each element is read, then written, by
  // one thread. Two outputs may not share any memory.
  for (int o = 0; o < args.outputs; ++o)
    for (int a = 0; a < args.arity; ++a)
      check_no_overlap(op, args.out_names[o], out_rows[o], args.in_names[a], in_rows[a], /*allow_same=*/true);
  for (int o = 1; o < args.outputs; ++o)
    for (int q = 0; q < o; ++q)
      check_no_overlap(op, args.out_names[o], out_rows[o], args.out_names[q], out_rows[q], /*allow_same=*/false);
  const Rows& out0 = out_rows[0];
  if (out0.numel() == 0) return false;

  // A dense tensor is one long row: no per-chunk division, one frame.
  bool flat = true;
  for (int a = 0; a < args.arity; ++a) flat = flat && in_rows[a].row_stride == in_rows[a].cols;
  for (int o = 0; o < args.outputs; ++o) flat = flat && out_rows[o].row_stride == out_rows[o].cols;
  p = ElementwiseParams{};
  p.rows = flat ? 1 : out0.rows;
  p.cols = flat ? out0.numel() : out0.cols;
  for (int a = 0; a < args.arity; ++a) {
    p.in[a] = in_rows[a].data;
    p.in_stride[a] = flat ? 0 : in_rows[a].row_stride;
  }
  for (int o = 0; o < args.outputs; ++o) {
    p.out[o] = out_rows[o].data;
    p.out_stride[o] = flat ? 0 : out_rows[o].row_stride;
  }
  // The frame is the first output's: its rows' offsets in their 16-byte segments size the plan.
  const int esize = static_cast<int>(out0.elem_bytes());
  const int vec = 16 / esize;
  const int max_off = (p.rows == 1 || out0.rows_aligned(16))
                          ? static_cast<int>((reinterpret_cast<std::uintptr_t>(p.out[0]) & 15u) / esize)
                          : vec - 1;
  plan = plan_elementwise(p.rows, p.cols, vec, max_off);
  if (chunks_per_thread != plan.chunks_per_thread) {  // the same chunks over more CTAs
    plan.chunks_per_thread = chunks_per_thread;
    const std::int64_t per_block = static_cast<std::int64_t>(plan.threads) * chunks_per_thread;
    plan.blocks = (plan.total_chunks + per_block - 1) / per_block;
  }
  p.chunks_per_row = plan.chunks_per_row;
  p.total_chunks = plan.total_chunks;
  if (plan.blocks > 0x7fffffffLL)
    fail(op, args.out_names[0], "too many elements for one launch: " + args.outs[0]->str());
  return true;
}

template <class Op>
void run_elementwise(const char* op, const Operands& args, cudaStream_t stream) {
  ElementwiseParams p;
  ElementwisePlan plan;
  constexpr int kUnroll = kChunksPerThread<Op>;
  if (!prepare_elementwise(op, args, kUnroll, p, plan)) return;
  dispatch_float(op, args.inputs[0]->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise_kernel<Op, T, kUnroll><<<static_cast<unsigned>(plan.blocks), plan.threads, 0, stream>>>(p);
  });
  TACHYON_CHECK_LAUNCH(op);
}

template <class Op>
void unary(const char* op, const TensorView& x, const TensorView& out, cudaStream_t stream) {
  const char* in_names[] = {"x"};
  const TensorView* inputs[] = {&x};
  const char* out_names[] = {"out"};
  const TensorView* outs[] = {&out};
  run_elementwise<Op>(op, {1, 1, in_names, inputs, out_names, outs}, stream);
}

template <class Op>
void binary(const char* op, const char* name_a, const TensorView& a, const char* name_b, const TensorView& b,
            const char* name_out, const TensorView& out, cudaStream_t stream) {
  const char* in_names[] = {name_a, name_b};
  const TensorView* inputs[] = {&a, &b};
  const char* out_names[] = {name_out};
  const TensorView* outs[] = {&out};
  run_elementwise<Op>(op, {2, 1, in_names, inputs, out_names, outs}, stream);
}

}  // namespace
}  // namespace tachyon::detail

namespace tachyon {
using namespace detail;

// Registration: one line per op.
void add(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t s) { binary<AddOp>("add", "a", a, "b", b, "out", out, s); }
void mul(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t s) { binary<MulOp>("mul", "a", a, "b", b, "out", out, s); }
void relu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary<ReluOp>("relu", x, out, s); }
void silu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary<SiluOp>("silu", x, out, s); }
void gelu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary<GeluTanhOp>("gelu", x, out, s); }
void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, cudaStream_t s) { binary<SwigluOp>("swiglu", "gate", gate, "up", up, "out", out, s); }

void silu_backward(const TensorView& dy, const TensorView& x, const TensorView& dx, cudaStream_t s) { binary<SiluBackwardOp>("silu_backward", "dy", dy, "x", x, "dx", dx, s); }
void gelu_backward(const TensorView& dy, const TensorView& x, const TensorView& dx, cudaStream_t s) { binary<GeluTanhBackwardOp>("gelu_backward", "dy", dy, "x", x, "dx", dx, s); }
void swiglu_backward(const TensorView& dy, const TensorView& gate, const TensorView& up, const TensorView& dgate,
                     const TensorView& dup, cudaStream_t s) {
  const char* in_names[] = {"dy", "gate", "up"};
  const TensorView* inputs[] = {&dy, &gate, &up};
  const char* out_names[] = {"dgate", "dup"};
  const TensorView* outs[] = {&dgate, &dup};
  run_elementwise<SwigluBackwardOp>("swiglu_backward", {3, 2, in_names, inputs, out_names, outs}, s);
}

}  // namespace tachyon
