#pragma once
// The host side of the elementwise family, shared by its entry points (elementwise.cpp:
// validation and the launch plan, no CUDA) and its kernels (elementwise.cu: the launch).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "elementwise/elementwise_plan.h"
#include "tachyon/tensor.h"

namespace tachyon::detail {

// One value per entry point; elementwise.cu maps each to its functor (ops.cuh).
enum class ElementwiseOp { add, mul, relu, silu, gelu, swiglu, silu_backward, gelu_backward, swiglu_backward };

inline constexpr int kMaxElementwiseInputs = 3;
inline constexpr int kMaxElementwiseOutputs = 2;

struct ElementwiseParams {
  std::int64_t rows, cols, chunks_per_row, total_chunks;
  const void* in[kMaxElementwiseInputs];
  std::int64_t in_stride[kMaxElementwiseInputs];  // elements
  void* out[kMaxElementwiseOutputs];
  std::int64_t out_stride[kMaxElementwiseOutputs];  // elements
};

// Chunks each thread keeps in flight (the kernel's kUnroll): 4 for one or two inputs; 3 for
// three inputs, 144 bytes a thread in flight (two inputs: 128) in the 80 registers that 3
// CTAs an SM allow. (swiglu_backward at 16 bits: 4 chunks spilled, and 4 chunks at 2 CTAs
// an SM ran ~10 % slower than 3.)
constexpr int elementwise_chunks_per_thread(int arity) { return arity > 2 ? 3 : 4; }

// The named operands of one call: inputs first (the reference for dtype and shape is
// inputs[0]), then the outputs.
struct Operands {
  int arity, outputs;
  const char* const* in_names;
  const TensorView* const* inputs;
  const char* const* out_names;
  const TensorView* const* outs;
};

// Validates every operand (no CUDA call) and fills the kernel's parameters and launch plan for
// `chunks_per_thread` chunks a thread. False for an empty problem: nothing to launch.
bool prepare_elementwise(const char* op, const Operands& args, int chunks_per_thread, ElementwiseParams& p,
                         ElementwisePlan& plan);

// The kernel of `kind` for `dtype` (f32, f16, bf16), as prepare_elementwise planned it with
// elementwise_chunks_per_thread(arity) chunks a thread (elementwise.cu).
void launch_elementwise(const char* op, ElementwiseOp kind, DType dtype, const ElementwiseParams& p,
                        const ElementwisePlan& plan, cudaStream_t stream);

}  // namespace tachyon::detail
