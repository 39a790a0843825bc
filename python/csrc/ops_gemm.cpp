// CUDA implementation of the GEMM operator: D = act(alpha A B^T + beta C + bias), with A's
// leading dimensions kept in D's shape (a (batch, seq, K) activation gives (batch, seq, N)).
#include <ATen/ATen.h>
#include <torch/library.h>

#include "torch_glue.h"

namespace tachyon::torch_glue {
namespace {

GemmArgs gemm_args(Call& c, const Tensor& a, const Tensor& b, const OptTensor& bias, const OptTensor& cm,
                   double alpha, double beta, int64_t activation, bool b_kn) {
  GemmArgs g;
  g.a = c.view("a", a);
  g.b = c.view("b", b);
  g.bias = c.view("bias", bias);
  g.c = c.view("c", cm);
  g.alpha = static_cast<float>(alpha);
  g.beta = static_cast<float>(beta);
  g.activation = activation_from(c.op, activation);
  g.b_layout = b_kn ? BLayout::kn : BLayout::nk;
  return g;
}

std::vector<int64_t> out_shape(Call& c, const Tensor& a, const Tensor& b, bool b_kn) {
  if (a.dim() < 1) fail(c.op, "a", "must have at least one dimension");
  if (b.dim() != 2) fail(c.op, "b", "must be 2-D");
  auto s = a.sizes();
  std::vector<int64_t> shape(s.begin(), s.end() - 1);
  shape.push_back(b_kn ? b.size(1) : b.size(0));
  return shape;
}

Tensor gemm(const Tensor& a, const Tensor& b, const OptTensor& bias, const OptTensor& cm, double alpha, double beta,
            int64_t activation, bool b_kn, std::optional<at::ScalarType> out_dtype) {
  Call c("gemm");
  GemmArgs g = gemm_args(c, a, b, bias, cm, alpha, beta, activation, b_kn);
  Tensor d = at::empty(out_shape(c, a, b, b_kn), a.options().dtype(out_dtype.value_or(a.scalar_type())));
  g.d = c.view("d", d);
  tachyon::gemm(g, c.stream());
  return d;
}

Tensor& gemm_out(const Tensor& a, const Tensor& b, const OptTensor& bias, const OptTensor& cm, double alpha,
                 double beta, int64_t activation, bool b_kn, Tensor& out) {
  Call c("gemm");
  GemmArgs g = gemm_args(c, a, b, bias, cm, alpha, beta, activation, b_kn);
  g.d = c.view("out", out);
  tachyon::gemm(g, c.stream());
  return out;
}

}  // namespace

// CPU tensors reach the same functions, which refuse them with a tachyon::Error naming the op
// and the argument (rather than the dispatcher's "no kernel for CPU").
static void register_impls(torch::Library& m) {
  m.impl("gemm", &gemm);
  m.impl("gemm.out", &gemm_out);
}

TORCH_LIBRARY_IMPL(tachyon, CUDA, m) { register_impls(m); }
TORCH_LIBRARY_IMPL(tachyon, CPU, m) { register_impls(m); }
}  // namespace tachyon::torch_glue
