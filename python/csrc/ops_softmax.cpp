// CUDA implementations of softmax, cross-entropy and the lse combine.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "torch_glue.h"

namespace tachyon::torch_glue {
namespace {

Tensor softmax(const Tensor& x, bool log) {
  Call c("softmax_forward");
  SoftmaxForward a;
  a.x = c.input("x", x);
  Tensor y = at::empty(x.sizes(), x.options());
  a.y = c.input("y", y);
  a.log = log;
  softmax_forward(a, c.stream());
  return y;
}

Tensor& softmax_out(const Tensor& x, bool log, Tensor& out) {
  Call c("softmax_forward");
  SoftmaxForward a;
  a.x = c.input("x", x);
  a.y = c.view("out", out);
  a.log = log;
  softmax_forward(a, c.stream());
  return out;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy, bool log) {
  Call c("softmax_backward");
  SoftmaxBackward a;
  a.y = c.input("y", y);
  a.dy = c.input("dy", dy);
  Tensor dx = at::empty(y.sizes(), y.options());
  a.dx = c.view("dx", dx);
  a.log = log;
  tachyon::softmax_backward(a, c.stream());
  return dx;
}

// Rows of the logits: every dimension but the last.
std::vector<int64_t> row_shape(const Tensor& logits) {
  auto s = logits.sizes();
  return std::vector<int64_t>(s.begin(), s.end() - (s.empty() ? 0 : 1));
}
TensorView as_vector(Call& c, const char* arg, const Tensor& t) {
  TensorView v = c.view(arg, t);
  if (!t.is_contiguous()) fail(c.op, arg, "must be contiguous");
  v.rank = 1;
  v.shape[0] = t.numel();
  v.stride[0] = 1;
  return v;
}

std::tuple<Tensor, Tensor, Tensor> cross_entropy(const Tensor& logits, const Tensor& target, int64_t reduction,
                                                 int64_t ignore_index, double label_smoothing, bool with_grad,
                                                 double grad_scale) {
  Call c("cross_entropy_forward");
  CrossEntropyForward a;
  a.logits = c.input("logits", logits);
  a.target = as_vector(c, "target", target);
  a.reduction = reduction_from(c.op, reduction);
  a.ignore_index = ignore_index;
  a.label_smoothing = static_cast<float>(label_smoothing);
  a.grad_output = static_cast<float>(grad_scale);
  const auto f32 = logits.options().dtype(at::kFloat);
  Tensor loss = a.reduction == Reduction::none ? at::empty(row_shape(logits), f32) : at::empty({}, f32);
  Tensor lse = at::empty(row_shape(logits), f32);
  Tensor dlogits = with_grad ? at::empty(logits.sizes(), logits.options()) : at::empty({0}, logits.options());
  a.loss = as_vector(c, "loss", loss);
  a.lse = as_vector(c, "lse", lse);
  if (with_grad) a.dlogits = c.view("dlogits", dlogits);
  const Tensor ws = attach_workspace(a, logits, [](const auto& args) { return cross_entropy_forward_workspace_bytes(args); });
  cross_entropy_forward(a, c.stream());
  return {loss, lse, dlogits};
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, const OptTensor& dloss,
                              int64_t reduction, int64_t ignore_index, double label_smoothing) {
  Call c("cross_entropy_backward");
  CrossEntropyBackward a;
  a.logits = c.input("logits", logits);
  a.target = as_vector(c, "target", target);
  a.lse = as_vector(c, "lse", lse);
  if (dloss) a.dloss = as_vector(c, "dloss", *dloss);
  a.reduction = reduction_from(c.op, reduction);
  a.ignore_index = ignore_index;
  a.label_smoothing = static_cast<float>(label_smoothing);
  Tensor dlogits = at::empty(logits.sizes(), logits.options());
  a.dlogits = c.view("dlogits", dlogits);
  const Tensor ws = attach_workspace(a, logits, [](const auto& args) { return cross_entropy_backward_workspace_bytes(args); });
  tachyon::cross_entropy_backward(a, c.stream());
  return dlogits;
}

Tensor lse_combine(const Tensor& partial) {
  Call c("lse_combine");
  LseCombine a;
  a.partial = c.view("partial", partial);
  if (partial.dim() != 2) fail(c.op, "partial", "must be 2-D (shards, rows)");
  Tensor lse = at::empty({partial.size(1)}, partial.options());
  a.lse = c.view("lse", lse);
  tachyon::lse_combine(a, c.stream());
  return lse;
}

}  // namespace

// CPU tensors reach the same functions, which refuse them with a tachyon::Error naming the op
// and the argument (rather than the dispatcher's "no kernel for CPU").
static void register_impls(torch::Library& m) {
  m.impl("softmax", &softmax);
  m.impl("softmax.out", &softmax_out);
  m.impl("softmax_backward", &softmax_backward);
  m.impl("cross_entropy", &cross_entropy);
  m.impl("cross_entropy_backward", &cross_entropy_backward);
  m.impl("lse_combine", &lse_combine);
}

TORCH_LIBRARY_IMPL(tachyon, CUDA, m) { register_impls(m); }
TORCH_LIBRARY_IMPL(tachyon, CPU, m) { register_impls(m); }
}  // namespace tachyon::torch_glue
