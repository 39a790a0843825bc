// CUDA implementations of the elementwise operators: outputs allocated like the first input
// (contiguous), then the C++ API on the current stream.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "torch_glue.h"

namespace tachyon::torch_glue {
namespace {

using Unary = void (*)(const TensorView&, const TensorView&, cudaStream_t);
using Binary = void (*)(const TensorView&, const TensorView&, const TensorView&, cudaStream_t);

template <Unary F>
Tensor& unary_out(const char* op, const Tensor& x, Tensor& out) {
  Call c(op);
  F(c.input("x", x), c.view("out", out), c.stream());
  return out;
}
template <Unary F>
Tensor unary(const char* op, const Tensor& x) {
  Call c(op);
  const TensorView xv = c.input("x", x);
  Tensor out = at::empty(x.sizes(), x.options());
  F(xv, c.view("out", out), c.stream());
  return out;
}

template <Binary F>
Tensor& binary_out(const char* op, const char* na, const Tensor& a, const char* nb, const Tensor& b, Tensor& out) {
  Call c(op);
  F(c.input(na, a), c.input(nb, b), c.view("out", out), c.stream());
  return out;
}
template <Binary F>
Tensor binary(const char* op, const char* na, const Tensor& a, const char* nb, const Tensor& b) {
  Call c(op);
  const TensorView av = c.input(na, a), bv = c.input(nb, b);
  Tensor out = at::empty(a.sizes(), a.options());
  F(av, bv, c.view("out", out), c.stream());
  return out;
}

// The C++ API's overloads with a defaulted stream, as plain function pointers.
void add_f(const TensorView& a, const TensorView& b, const TensorView& o, cudaStream_t s) { tachyon::add(a, b, o, s); }
void mul_f(const TensorView& a, const TensorView& b, const TensorView& o, cudaStream_t s) { tachyon::mul(a, b, o, s); }
void swiglu_f(const TensorView& a, const TensorView& b, const TensorView& o, cudaStream_t s) { tachyon::swiglu(a, b, o, s); }
void silu_bwd_f(const TensorView& dy, const TensorView& x, const TensorView& o, cudaStream_t s) { tachyon::silu_backward(dy, x, o, s); }
void gelu_bwd_f(const TensorView& dy, const TensorView& x, const TensorView& o, cudaStream_t s) { tachyon::gelu_backward(dy, x, o, s); }
void relu_f(const TensorView& x, const TensorView& o, cudaStream_t s) { tachyon::relu(x, o, s); }
void silu_f(const TensorView& x, const TensorView& o, cudaStream_t s) { tachyon::silu(x, o, s); }
void gelu_f(const TensorView& x, const TensorView& o, cudaStream_t s) { tachyon::gelu(x, o, s); }

Tensor add(const Tensor& a, const Tensor& b) { return binary<add_f>("add", "a", a, "b", b); }
Tensor& add_out(const Tensor& a, const Tensor& b, Tensor& out) { return binary_out<add_f>("add", "a", a, "b", b, out); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary<mul_f>("mul", "a", a, "b", b); }
Tensor& mul_out(const Tensor& a, const Tensor& b, Tensor& out) { return binary_out<mul_f>("mul", "a", a, "b", b, out); }
Tensor swiglu(const Tensor& g, const Tensor& u) { return binary<swiglu_f>("swiglu", "gate", g, "up", u); }
Tensor& swiglu_out(const Tensor& g, const Tensor& u, Tensor& out) { return binary_out<swiglu_f>("swiglu", "gate", g, "up", u, out); }
Tensor relu(const Tensor& x) { return unary<relu_f>("relu", x); }
Tensor& relu_out(const Tensor& x, Tensor& out) { return unary_out<relu_f>("relu", x, out); }
Tensor silu(const Tensor& x) { return unary<silu_f>("silu", x); }
Tensor& silu_out(const Tensor& x, Tensor& out) { return unary_out<silu_f>("silu", x, out); }
Tensor gelu(const Tensor& x) { return unary<gelu_f>("gelu", x); }
Tensor& gelu_out(const Tensor& x, Tensor& out) { return unary_out<gelu_f>("gelu", x, out); }

// Backwards: dx takes x's layout (dy may be strided).
Tensor silu_backward(const Tensor& dy, const Tensor& x) { return binary<silu_bwd_f>("silu_backward", "dy", dy, "x", x); }
Tensor gelu_backward(const Tensor& dy, const Tensor& x) { return binary<gelu_bwd_f>("gelu_backward", "dy", dy, "x", x); }

std::tuple<Tensor, Tensor> swiglu_backward(const Tensor& dy, const Tensor& gate, const Tensor& up) {
  Call c("swiglu_backward");
  const TensorView dyv = c.input("dy", dy), gv = c.input("gate", gate), uv = c.input("up", up);
  Tensor dgate = at::empty(gate.sizes(), gate.options());
  Tensor dup = at::empty(up.sizes(), up.options());
  tachyon::swiglu_backward(dyv, gv, uv, c.view("dgate", dgate), c.view("dup", dup), c.stream());
  return {dgate, dup};
}

}  // namespace

// CPU tensors reach the same functions, which refuse them with a tachyon::Error naming the op
// and the argument (rather than the dispatcher's "no kernel for CPU").
static void register_impls(torch::Library& m) {
  m.impl("add", &add);
  m.impl("add.out", &add_out);
  m.impl("mul", &mul);
  m.impl("mul.out", &mul_out);
  m.impl("relu", &relu);
  m.impl("relu.out", &relu_out);
  m.impl("silu", &silu);
  m.impl("silu.out", &silu_out);
  m.impl("gelu", &gelu);
  m.impl("gelu.out", &gelu_out);
  m.impl("swiglu", &swiglu);
  m.impl("swiglu.out", &swiglu_out);
  m.impl("silu_backward", &silu_backward);
  m.impl("gelu_backward", &gelu_backward);
  m.impl("swiglu_backward", &swiglu_backward);
}

TORCH_LIBRARY_IMPL(tachyon, CUDA, m) { register_impls(m); }
TORCH_LIBRARY_IMPL(tachyon, CPU, m) { register_impls(m); }
}  // namespace tachyon::torch_glue
