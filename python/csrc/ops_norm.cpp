// CUDA implementations of the norm operators. y takes x's dtype, residual_out the residual's;
// mean / rstd are float32 vectors over the rows; dweight / dbias take the weight's dtype.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "torch_glue.h"

namespace tachyon::torch_glue {
namespace {

// Per-row statistics: one float per row of x (all dimensions but the last).
Tensor row_stats(const Tensor& x) {
  return at::empty(x.sizes().slice(0, x.dim() - 1), x.options().dtype(at::kFloat));
}
TensorView flat_rows(Call& c, const char* arg, const Tensor& t) {
  TensorView v = c.view(arg, t);
  v.rank = 1;  // a (contiguous) per-row vector of any leading shape
  v.shape[0] = t.numel();
  v.stride[0] = 1;
  if (!t.is_contiguous()) fail(c.op, arg, "must be contiguous");
  return v;
}

std::tuple<Tensor, Tensor, Tensor> rms_norm(const Tensor& x, const OptTensor& weight, const OptTensor& residual,
                                            double eps, double weight_offset) {
  Call c("rms_norm_forward");
  RmsNormForward a;
  a.x = c.input("x", x);
  a.weight = c.view("weight", weight);
  a.residual = c.input("residual", residual);
  if (x.dim() == 0) fail(c.op, "x", "must have at least one dimension");
  Tensor y = at::empty(x.sizes(), x.options());
  Tensor residual_out = residual ? at::empty(x.sizes(), residual->options()) : at::empty({0}, x.options());
  Tensor rstd = row_stats(x);
  a.y = c.view("y", y);
  if (residual) a.residual_out = c.view("residual_out", residual_out);
  a.rstd = flat_rows(c, "rstd", rstd);
  a.eps = static_cast<float>(eps);
  a.weight_offset = static_cast<float>(weight_offset);
  rms_norm_forward(a, c.stream());
  return {y, residual_out, rstd};
}

void rms_norm_out(const Tensor& x, const OptTensor& weight, const OptTensor& residual, double eps,
                  double weight_offset, const Tensor& y, const OptTensor& residual_out, const OptTensor& rstd) {
  Call c("rms_norm_forward");
  RmsNormForward a;
  a.x = c.input("x", x);
  a.weight = c.view("weight", weight);
  a.residual = c.input("residual", residual);
  a.y = c.view("y", y);
  a.residual_out = c.view("residual_out", residual_out);
  if (rstd) a.rstd = flat_rows(c, "rstd", *rstd);
  a.eps = static_cast<float>(eps);
  a.weight_offset = static_cast<float>(weight_offset);
  rms_norm_forward(a, c.stream());
}

std::tuple<Tensor, Tensor> rms_norm_backward(const Tensor& dy, const Tensor& x, const OptTensor& weight,
                                             const Tensor& rstd, const OptTensor& dresidual, double weight_offset,
                                             bool weight_grad) {
  Call c("rms_norm_backward");
  RmsNormBackward a;
  a.dy = c.input("dy", dy);
  a.x = c.input("x", x);
  a.weight = c.view("weight", weight);
  a.rstd = flat_rows(c, "rstd", rstd);
  a.dresidual = c.input("dresidual", dresidual);
  a.weight_offset = static_cast<float>(weight_offset);
  Tensor dx = at::empty(x.sizes(), x.options());
  a.dx = c.view("dx", dx);
  Tensor dw = weight && weight_grad ? at::empty(weight->sizes(), weight->options()) : at::empty({0}, x.options());
  if (weight && weight_grad) a.dw = c.view("dweight", dw);
  const Tensor ws = attach_workspace(a, x, [](const auto& args) { return rms_norm_backward_workspace_bytes(args); });
  tachyon::rms_norm_backward(a, c.stream());
  return {dx, dw};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& x, const OptTensor& weight, const OptTensor& bias,
                                              double eps) {
  Call c("layer_norm_forward");
  LayerNormForward a;
  a.x = c.input("x", x);
  a.weight = c.view("weight", weight);
  a.bias = c.view("bias", bias);
  if (x.dim() == 0) fail(c.op, "x", "must have at least one dimension");
  Tensor y = at::empty(x.sizes(), x.options());
  Tensor mean = row_stats(x), rstd = row_stats(x);
  a.y = c.view("y", y);
  a.mean = flat_rows(c, "mean", mean);
  a.rstd = flat_rows(c, "rstd", rstd);
  a.eps = static_cast<float>(eps);
  layer_norm_forward(a, c.stream());
  return {y, mean, rstd};
}

void layer_norm_out(const Tensor& x, const OptTensor& weight, const OptTensor& bias, double eps, const Tensor& y,
                    const OptTensor& mean, const OptTensor& rstd) {
  Call c("layer_norm_forward");
  LayerNormForward a;
  a.x = c.input("x", x);
  a.weight = c.view("weight", weight);
  a.bias = c.view("bias", bias);
  a.y = c.view("y", y);
  if (mean) a.mean = flat_rows(c, "mean", *mean);
  if (rstd) a.rstd = flat_rows(c, "rstd", *rstd);
  a.eps = static_cast<float>(eps);
  layer_norm_forward(a, c.stream());
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& dy, const Tensor& x, const OptTensor& weight,
                                                       const Tensor& mean, const Tensor& rstd, bool weight_grad,
                                                       bool bias_grad) {
  Call c("layer_norm_backward");
  LayerNormBackward a;
  a.dy = c.input("dy", dy);
  a.x = c.input("x", x);
  a.weight = c.view("weight", weight);
  a.mean = flat_rows(c, "mean", mean);
  a.rstd = flat_rows(c, "rstd", rstd);
  Tensor dx = at::empty(x.sizes(), x.options());
  a.dx = c.view("dx", dx);
  const bool want_dw = weight && weight_grad;
  Tensor dw = want_dw ? at::empty(weight->sizes(), weight->options()) : at::empty({0}, x.options());
  if (want_dw) a.dw = c.view("dweight", dw);
  const int64_t n = x.dim() > 0 ? x.size(-1) : 1;
  Tensor db = bias_grad ? at::empty({n}, weight ? weight->options() : x.options()) : at::empty({0}, x.options());
  if (bias_grad) a.db = c.view("dbias", db);
  const Tensor ws = attach_workspace(a, x, [](const auto& args) { return layer_norm_backward_workspace_bytes(args); });
  tachyon::layer_norm_backward(a, c.stream());
  return {dx, dw, db};
}

}  // namespace

// CPU tensors reach the same functions, which refuse them with a tachyon::Error naming the op
// and the argument (rather than the dispatcher's "no kernel for CPU").
static void register_impls(torch::Library& m) {
  m.impl("rms_norm", &rms_norm);
  m.impl("rms_norm.out", &rms_norm_out);
  m.impl("rms_norm_backward", &rms_norm_backward);
  m.impl("layer_norm", &layer_norm);
  m.impl("layer_norm.out", &layer_norm_out);
  m.impl("layer_norm_backward", &layer_norm_backward);
}

TORCH_LIBRARY_IMPL(tachyon, CUDA, m) { register_impls(m); }
TORCH_LIBRARY_IMPL(tachyon, CPU, m) { register_impls(m); }
}  // namespace tachyon::torch_glue
