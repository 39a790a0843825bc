// Elementwise entry points: validation and the launch plan (no CUDA), then the kernel launch
// in elementwise.cu.
#include "core/host_device.h"
#include "core/validate.h"
#include "elementwise/elementwise_launch.h"
#include "tachyon/elementwise.h"

namespace tachyon::detail {

namespace {
// The kernel indexes columns with 64 bits: rows (and flat tensors) of any length.
constexpr std::int64_t kNoColumnLimit = 0x7fffffffffffffffLL;
}  // namespace

bool prepare_elementwise(const char* op, const Operands& args, int chunks_per_thread, ElementwiseParams& p,
                         ElementwisePlan& plan) {
  Rows in_rows[kMaxElementwiseInputs], out_rows[kMaxElementwiseOutputs];
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
  if (out0.empty()) return false;

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
    plan.blocks = ceil_div(plan.total_chunks, per_block);
  }
  p.chunks_per_row = plan.chunks_per_row;
  p.total_chunks = plan.total_chunks;
  if (plan.blocks > 0x7fffffffLL)
    fail(op, args.out_names[0], "too many elements for one launch: " + args.outs[0]->str());
  return true;
}

namespace {

void run(const char* op, ElementwiseOp kind, const Operands& args, cudaStream_t stream) {
  ElementwiseParams p;
  ElementwisePlan plan;
  if (!prepare_elementwise(op, args, elementwise_chunks_per_thread(args.arity), p, plan)) return;
  launch_elementwise(op, kind, args.inputs[0]->dtype, p, plan, stream);
}

void unary(const char* op, ElementwiseOp kind, const TensorView& x, const TensorView& out, cudaStream_t stream) {
  const char* in_names[] = {"x"};
  const TensorView* inputs[] = {&x};
  const char* out_names[] = {"out"};
  const TensorView* outs[] = {&out};
  run(op, kind, {1, 1, in_names, inputs, out_names, outs}, stream);
}

void binary(const char* op, ElementwiseOp kind, const char* name_a, const TensorView& a, const char* name_b,
            const TensorView& b, const char* name_out, const TensorView& out, cudaStream_t stream) {
  const char* in_names[] = {name_a, name_b};
  const TensorView* inputs[] = {&a, &b};
  const char* out_names[] = {name_out};
  const TensorView* outs[] = {&out};
  run(op, kind, {2, 1, in_names, inputs, out_names, outs}, stream);
}

}  // namespace
}  // namespace tachyon::detail

namespace tachyon {
using namespace detail;
using K = ElementwiseOp;

// Registration: one line per op.
void add(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t s) { binary("add", K::add, "a", a, "b", b, "out", out, s); }
void mul(const TensorView& a, const TensorView& b, const TensorView& out, cudaStream_t s) { binary("mul", K::mul, "a", a, "b", b, "out", out, s); }
void relu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary("relu", K::relu, x, out, s); }
void silu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary("silu", K::silu, x, out, s); }
void gelu(const TensorView& x, const TensorView& out, cudaStream_t s) { unary("gelu", K::gelu, x, out, s); }
void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, cudaStream_t s) { binary("swiglu", K::swiglu, "gate", gate, "up", up, "out", out, s); }

void silu_backward(const TensorView& dy, const TensorView& x, const TensorView& dx, cudaStream_t s) { binary("silu_backward", K::silu_backward, "dy", dy, "x", x, "dx", dx, s); }
void gelu_backward(const TensorView& dy, const TensorView& x, const TensorView& dx, cudaStream_t s) { binary("gelu_backward", K::gelu_backward, "dy", dy, "x", x, "dx", dx, s); }
void swiglu_backward(const TensorView& dy, const TensorView& gate, const TensorView& up, const TensorView& dgate,
                     const TensorView& dup, cudaStream_t s) {
  const char* in_names[] = {"dy", "gate", "up"};
  const TensorView* inputs[] = {&dy, &gate, &up};
  const char* out_names[] = {"dgate", "dup"};
  const TensorView* outs[] = {&dgate, &dup};
  run("swiglu_backward", K::swiglu_backward, {3, 2, in_names, inputs, out_names, outs}, s);
}

}  // namespace tachyon
