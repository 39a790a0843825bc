// The tachyon operator namespace: every schema in one place. Implementations register per
// family (ops_*.cpp: CUDA kernels; autograd_*.cpp: the Autograd key); fake (meta)
// implementations are in python/tachyon/_fake.py.
//
// Conventions: optional outputs that a call does not produce come back as empty tensors;
// `.out` overloads write caller-provided tensors and return them (or nothing).
#include <torch/library.h>

TORCH_LIBRARY(tachyon, m) {
  // Elementwise, over any shape with a contiguous inner dimension.
  m.def("add(Tensor a, Tensor b) -> Tensor");
  m.def("add.out(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("mul(Tensor a, Tensor b) -> Tensor");
  m.def("mul.out(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("silu(Tensor x) -> Tensor");
  m.def("silu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gelu(Tensor x) -> Tensor");
  m.def("gelu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("swiglu(Tensor gate, Tensor up) -> Tensor");
  m.def("swiglu.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("silu_backward(Tensor dy, Tensor x) -> Tensor");
  m.def("gelu_backward(Tensor dy, Tensor x) -> Tensor");
  m.def("swiglu_backward(Tensor dy, Tensor gate, Tensor up) -> (Tensor dgate, Tensor dup)");

  // Norms over the last dimension. rms_norm returns (y, residual_out, rstd); residual_out is
  // empty without a residual.
  m.def("rms_norm(Tensor x, Tensor? weight=None, Tensor? residual=None, float eps=1e-6, float weight_offset=0.0) -> (Tensor y, Tensor residual_out, Tensor rstd)");
  m.def("rms_norm.out(Tensor x, Tensor? weight, Tensor? residual, float eps, float weight_offset, *, Tensor(a!) y, Tensor(b!)? residual_out=None, Tensor(c!)? rstd=None) -> ()");
  m.def("rms_norm_backward(Tensor dy, Tensor x, Tensor? weight, Tensor rstd, Tensor? dresidual=None, float weight_offset=0.0, bool weight_grad=True) -> (Tensor dx, Tensor dweight)");
  m.def("layer_norm(Tensor x, Tensor? weight=None, Tensor? bias=None, float eps=1e-5) -> (Tensor y, Tensor mean, Tensor rstd)");
  m.def("layer_norm.out(Tensor x, Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) y, Tensor(b!)? mean=None, Tensor(c!)? rstd=None) -> ()");
  m.def("layer_norm_backward(Tensor dy, Tensor x, Tensor? weight, Tensor mean, Tensor rstd, bool weight_grad=True, bool bias_grad=True) -> (Tensor dx, Tensor dweight, Tensor dbias)");

  // Softmax / log-softmax over the last dimension.
  m.def("softmax(Tensor x, bool log=False) -> Tensor");
  m.def("softmax.out(Tensor x, bool log=False, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("softmax_backward(Tensor y, Tensor dy, bool log=False) -> Tensor");

  // Cross-entropy over logits (M, N). reduction: 0 none, 1 sum, 2 mean. Returns (loss, lse,
  // dlogits); with with_grad the forward also writes dlogits = grad_scale * dloss/dlogits in
  // the same pass (else dlogits is empty).
  m.def("cross_entropy(Tensor logits, Tensor target, int reduction=2, int ignore_index=-100, float label_smoothing=0.0, bool with_grad=False, float grad_scale=1.0) -> (Tensor loss, Tensor lse, Tensor dlogits)");
  m.def("cross_entropy_backward(Tensor logits, Tensor target, Tensor lse, Tensor? dloss, int reduction=2, int ignore_index=-100, float label_smoothing=0.0) -> Tensor");
  m.def("lse_combine(Tensor partial) -> Tensor");

  // D = act(alpha * A B^T + beta * C + bias); B is (N, K), or (K, N) with b_kn.
  // activation: 0 none, 1 relu, 2 silu, 3 gelu_tanh.
  m.def("gemm(Tensor a, Tensor b, Tensor? bias=None, Tensor? c=None, float alpha=1.0, float beta=0.0, int activation=0, bool b_kn=False, ScalarType? out_dtype=None) -> Tensor");
  m.def("gemm.out(Tensor a, Tensor b, Tensor? bias=None, Tensor? c=None, float alpha=1.0, float beta=0.0, int activation=0, bool b_kn=False, *, Tensor(a!) out) -> Tensor(a!)");
}
