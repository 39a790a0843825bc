#pragma once
// The one place where torch tensors become tachyon::TensorViews: device and dtype checks that
// must hold before the C++ API sees a pointer, the current stream, and output allocation
// through torch's caching allocator. Every check throws tachyon::Error ("<op>: <arg>: ...",
// surfaced in Python as tachyon.Error) before any CUDA call.
#include <ATen/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#include <vector>

#include "tachyon/tachyon.h"

namespace tachyon::torch_glue {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

// One op call: every tensor must be on one CUDA device (the first tensor's); the call runs
// there, on that device's current stream, as torch's own ops do.
struct Call {
  const char* op;
  c10::DeviceIndex device = -1;
  c10::cuda::OptionalCUDAGuard guard;
  std::vector<Tensor> copies;  // inputs copied by input(), alive until the call returns

  explicit Call(const char* op_name) : op(op_name) {}
  // A present tensor: CUDA, on the call's device, a dtype Tachyon knows, rank <= 4.
  TensorView view(const char* arg, const Tensor& t);
  TensorView view(const char* arg, const OptTensor& t) { return t.has_value() ? view(arg, *t) : TensorView{}; }
  // An input read as rows: as view(), through rows_of (a contiguous copy, kept for the call,
  // when the kernels cannot take the tensor's strides).
  TensorView input(const char* arg, const Tensor& t);
  TensorView input(const char* arg, const OptTensor& t) { return t.has_value() ? input(arg, *t) : TensorView{}; }
  // A one-element tensor of any rank (a reduced loss, a scalar gradient) as a 1-D view.
  TensorView scalar_view(const char* arg, const Tensor& t);
  cudaStream_t stream() const;
};

[[noreturn]] void fail(const char* op, const char* arg, const std::string& what);

// An input tensor in a layout the row kernels take: returned as it is when its last dimension
// is contiguous and its leading dimensions collapse into rows (any row stride, any storage
// offset), else as a contiguous copy -- torch ops accept any strides (expanded gradients,
// transposed heads), the kernels take rows.
Tensor rows_of(const Tensor& t);
inline OptTensor rows_of(const OptTensor& t) { return t ? OptTensor(rows_of(*t)) : std::nullopt; }

// Scratch memory for a call, from torch's caching allocator (safe under CUDA-graph capture):
// the size the C++ API asks for `args`, attached to them; the returned tensor keeps it alive.
Tensor workspace(const Tensor& like, std::size_t bytes);
template <class Args, class Size>
Tensor attach_workspace(Args& args, const Tensor& like, Size size_of) {
  const std::size_t bytes = size_of(args);
  if (bytes == 0) return Tensor();
  Tensor ws = workspace(like, bytes);
  args.workspace = ws.data_ptr();
  args.workspace_bytes = bytes;
  return ws;
}

Reduction reduction_from(const char* op, std::int64_t r);    // 0 none, 1 sum, 2 mean
Activation activation_from(const char* op, std::int64_t a);  // 0 none, 1 relu, 2 silu, 3 gelu_tanh

}  // namespace tachyon::torch_glue
