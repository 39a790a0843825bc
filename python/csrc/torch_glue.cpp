#include "torch_glue.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include <string>

namespace tachyon::torch_glue {

void fail(const char* op, const char* arg, const std::string& what) {
  throw Error(std::string(op) + ": " + arg + ": " + what);
}

namespace {
DType dtype_of(const char* op, const char* arg, at::ScalarType s) {
  switch (s) {
    case at::kFloat: return DType::f32;
    case at::kHalf: return DType::f16;
    case at::kBFloat16: return DType::bf16;
    case at::kInt: return DType::i32;
    case at::kLong: return DType::i64;
    default: fail(op, arg, std::string("dtype ") + c10::toString(s) + " is not supported (float32, float16, bfloat16; int32 / int64 targets)");
  }
}
}  // namespace

TensorView Call::view(const char* arg, const Tensor& t) {
  if (!t.defined()) fail(op, arg, "is an undefined tensor");
  const std::int64_t rank = t.dim();
  if (rank > kMaxRank) fail(op, arg, "rank " + std::to_string(rank) + " is more than " + std::to_string(kMaxRank));
  const DType dtype = dtype_of(op, arg, t.scalar_type());
  if (!t.is_cuda()) fail(op, arg, "is on " + t.device().str() + "; tachyon ops take CUDA tensors");
  const c10::DeviceIndex d = t.device().index();
  if (device < 0) {
    device = d;
    guard.set_index(d);
  } else if (d != device) {
    fail(op, arg, "is on cuda:" + std::to_string(d) + " but the other tensors are on cuda:" + std::to_string(device));
  }
  TensorView v;
  v.data = t.data_ptr();
  v.dtype = dtype;
  v.rank = static_cast<int>(rank);
  for (std::int64_t i = 0; i < rank; ++i) {
    v.shape[i] = t.size(i);
    v.stride[i] = t.stride(i);
  }
  return v;
}

TensorView Call::input(const char* arg, const Tensor& t) {
  const TensorView v = view(arg, t);
  Tensor rows = rows_of(t);
  if (rows.is_same(t)) return v;
  copies.push_back(std::move(rows));
  return view(arg, copies.back());
}

TensorView Call::scalar_view(const char* arg, const Tensor& t) {
  TensorView v = view(arg, t);
  if (t.numel() != 1) fail(op, arg, "must have one element, has " + std::to_string(t.numel()));
  v.rank = 1;
  v.shape[0] = 1;
  v.stride[0] = 1;
  return v;
}

cudaStream_t Call::stream() const {
  return c10::cuda::getCurrentCUDAStream(device < 0 ? c10::cuda::current_device() : device).stream();
}

Tensor rows_of(const Tensor& t) {
  const int64_t rank = t.dim();
  if (rank == 0) return t;
  bool ok = t.size(-1) <= 1 || t.stride(-1) == 1;
  for (int64_t d = rank - 3; ok && d >= 0; --d)
    ok = t.size(d) == 1 || t.stride(d) == t.stride(d + 1) * t.size(d + 1);
  if (ok && rank >= 2 && t.numel() > 0) ok = t.size(-2) == 1 || t.stride(-2) >= t.size(-1);
  return ok ? t : t.contiguous();
}

Tensor workspace(const Tensor& like, std::size_t bytes) {
  return at::empty({static_cast<std::int64_t>(bytes)}, like.options().dtype(at::kByte));
}

Reduction reduction_from(const char* op, std::int64_t r) {
  switch (r) {
    case 0: return Reduction::none;
    case 1: return Reduction::sum;
    case 2: return Reduction::mean;
    default: fail(op, "reduction", "must be 0 (none), 1 (sum) or 2 (mean), got " + std::to_string(r));
  }
}

Activation activation_from(const char* op, std::int64_t a) {
  switch (a) {
    case 0: return Activation::none;
    case 1: return Activation::relu;
    case 2: return Activation::silu;
    case 3: return Activation::gelu_tanh;
    default: fail(op, "activation", "must be 0 (none), 1 (relu), 2 (silu) or 3 (gelu_tanh), got " + std::to_string(a));
  }
}

}  // namespace tachyon::torch_glue
