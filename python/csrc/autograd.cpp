// Autograd for every differentiable tachyon operator, registered at the Autograd key in C++:
// a call whose inputs need no gradient re-dispatches to the CUDA kernel at once (no Python,
// no graph node), one that does records a torch::autograd::Function whose backward runs
// Tachyon's backward kernels. torch.compile / export trace through these like any op with a
// C++ autograd formula. Backward operators are not differentiable again (no double backward).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "torch_glue.h"

namespace tachyon::torch_glue {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}
#define TACHYON_OP(var, name, sig) \
  static const auto var = handle<sig>(name)

bool wants_grad(std::initializer_list<const Tensor*> ts, std::initializer_list<const OptTensor*> opts = {}) {
  if (!at::GradMode::is_enabled()) return false;
  for (const Tensor* t : ts)
    if (t->defined() && t->requires_grad()) return true;
  for (const OptTensor* t : opts)
    if (t->has_value() && (*t)->defined() && (*t)->requires_grad()) return true;
  return false;
}
OptTensor opt(const Tensor& t) { return t.defined() ? OptTensor(t) : std::nullopt; }

// ---- elementwise -------------------------------------------------------------------------
using UnarySig = Tensor(const Tensor&);
using BinarySig = Tensor(const Tensor&, const Tensor&);
using SwigluBwdSig = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&);

// silu and gelu: the forward saves x, the backward is one elementwise kernel over (dy, x).
template <const char* kForward, const char* kBackward>
struct ActivationFn : torch::autograd::Function<ActivationFn<kForward, kBackward>> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    TACHYON_OP(op, kForward, UnarySig);
    at::AutoDispatchBelowADInplaceOrView g;
    ctx->save_for_backward({x});
    return op.call(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(bwd, kBackward, BinarySig);
    return {bwd.call(grads[0], ctx->get_saved_variables()[0])};
  }
};
constexpr char kSilu[] = "tachyon::silu", kSiluBackward[] = "tachyon::silu_backward", kGelu[] = "tachyon::gelu",
               kGeluBackward[] = "tachyon::gelu_backward";
using SiluFn = ActivationFn<kSilu, kSiluBackward>;
using GeluFn = ActivationFn<kGelu, kGeluBackward>;

struct ReluFn : torch::autograd::Function<ReluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    TACHYON_OP(op, "tachyon::relu", UnarySig);
    at::AutoDispatchBelowADInplaceOrView g;
    Tensor y = op.call(x);
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {at::threshold_backward(grads[0], ctx->get_saved_variables()[0], 0)};
  }
};

struct SwigluFn : torch::autograd::Function<SwigluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& gate, const Tensor& up) {
    TACHYON_OP(op, "tachyon::swiglu", BinarySig);
    at::AutoDispatchBelowADInplaceOrView g;
    ctx->save_for_backward({gate, up});
    return op.call(gate, up);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(bwd, "tachyon::swiglu_backward", SwigluBwdSig);
    auto s = ctx->get_saved_variables();
    auto [dgate, dup] = bwd.call(grads[0], s[0], s[1]);
    return {dgate, dup};
  }
};

struct AddFn : torch::autograd::Function<AddFn> {
  static Tensor forward(AutogradContext*, const Tensor& a, const Tensor& b) {
    TACHYON_OP(op, "tachyon::add", BinarySig);
    at::AutoDispatchBelowADInplaceOrView g;
    return op.call(a, b);
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], grads[0]}; }
};

struct MulFn : torch::autograd::Function<MulFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    TACHYON_OP(op, "tachyon::mul", BinarySig);
    at::AutoDispatchBelowADInplaceOrView g;
    ctx->save_for_backward({a, b});
    return op.call(a, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(op, "tachyon::mul", BinarySig);
    auto s = ctx->get_saved_variables();
    Tensor dy = grads[0].stride(-1) == 1 ? grads[0] : grads[0].contiguous();
    return {ctx->needs_input_grad(0) ? op.call(dy, s[1]) : Tensor(),
            ctx->needs_input_grad(1) ? op.call(dy, s[0]) : Tensor()};
  }
};

template <class Fn, const char* kName>
Tensor unary_autograd(const Tensor& x) {
  if (wants_grad({&x})) return Fn::apply(x);
  TACHYON_OP(op, kName, UnarySig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(x);
}
template <class Fn, const char* kName>
Tensor binary_autograd(const Tensor& a, const Tensor& b) {
  if (wants_grad({&a, &b})) return Fn::apply(a, b);
  TACHYON_OP(op, kName, BinarySig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(a, b);
}
constexpr char kRelu[] = "tachyon::relu", kSwiglu[] = "tachyon::swiglu", kAdd[] = "tachyon::add",
               kMul[] = "tachyon::mul";

// ---- norms -------------------------------------------------------------------------------
using RmsSig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const OptTensor&, const OptTensor&, double, double);
using RmsBwdSig = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const OptTensor&, const Tensor&,
                                             const OptTensor&, double, bool);

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x, const OptTensor& weight,
                               const OptTensor& residual, double eps, double offset) {
    TACHYON_OP(op, "tachyon::rms_norm", RmsSig);
    at::AutoDispatchBelowADInplaceOrView g;
    auto [y, residual_out, rstd] = op.call(x, weight, residual, eps, offset);
    // The backward normalises h = x + residual (residual_out) when fused, else x.
    ctx->save_for_backward({residual ? residual_out : x, weight ? *weight : Tensor(), rstd});
    ctx->saved_data["offset"] = offset;
    ctx->saved_data["fused"] = residual.has_value();
    ctx->mark_non_differentiable({rstd});
    return {y, residual_out, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(bwd, "tachyon::rms_norm_backward", RmsBwdSig);
    auto s = ctx->get_saved_variables();
    const bool fused = ctx->saved_data["fused"].toBool();
    const bool want_dw = s[1].defined() && ctx->needs_input_grad(1);
    // With an fp32 residual stream beside 16-bit x, h is fp32 and dy (y's gradient) 16-bit: the
    // backward reads it as it is. 16-bit h takes dy of its own dtype only.
    Tensor dy = grads[0].defined() ? grads[0] : at::zeros_like(s[0]);
    if (s[0].scalar_type() != at::kFloat && dy.scalar_type() != s[0].scalar_type()) dy = dy.to(s[0].scalar_type());
    OptTensor dres = fused && grads[1].defined() ? opt(grads[1]) : std::nullopt;
    auto [dx, dw] = bwd.call(dy, s[0], opt(s[1]), s[2], dres, ctx->saved_data["offset"].toDouble(), want_dw);
    return {dx, want_dw ? dw : Tensor(), fused ? dx : Tensor(), Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor, Tensor> rms_norm_autograd(const Tensor& x, const OptTensor& weight,
                                                     const OptTensor& residual, double eps, double offset) {
  if (wants_grad({&x}, {&weight, &residual})) {
    auto out = RmsNormFn::apply(x, weight, residual, eps, offset);
    return {out[0], out[1], out[2]};
  }
  TACHYON_OP(op, "tachyon::rms_norm", RmsSig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(x, weight, residual, eps, offset);
}

using LnSig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const OptTensor&, const OptTensor&, double);
using LnBwdSig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const OptTensor&, const Tensor&,
                                                    const Tensor&, bool, bool);

struct LayerNormFn : torch::autograd::Function<LayerNormFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x, const OptTensor& weight, const OptTensor& bias,
                               double eps) {
    TACHYON_OP(op, "tachyon::layer_norm", LnSig);
    at::AutoDispatchBelowADInplaceOrView g;
    auto [y, mean, rstd] = op.call(x, weight, bias, eps);
    ctx->save_for_backward({x, weight ? *weight : Tensor(), mean, rstd});
    ctx->saved_data["bias"] = bias.has_value();
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(bwd, "tachyon::layer_norm_backward", LnBwdSig);
    auto s = ctx->get_saved_variables();
    // needs_input_grad counts the tensor inputs present: x, then weight and bias if given.
    const bool want_dw = s[1].defined() && ctx->needs_input_grad(1);
    const bool want_db = ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(s[1].defined() ? 2 : 1);
    Tensor dy = grads[0].defined() ? grads[0] : at::zeros_like(s[0]);
    auto [dx, dw, db] = bwd.call(dy, s[0], opt(s[1]), s[2], s[3], want_dw, want_db);
    return {dx, want_dw ? dw : Tensor(), want_db ? db : Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor, Tensor> layer_norm_autograd(const Tensor& x, const OptTensor& weight,
                                                       const OptTensor& bias, double eps) {
  if (wants_grad({&x}, {&weight, &bias})) {
    auto out = LayerNormFn::apply(x, weight, bias, eps);
    return {out[0], out[1], out[2]};
  }
  TACHYON_OP(op, "tachyon::layer_norm", LnSig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(x, weight, bias, eps);
}

// ---- softmax -----------------------------------------------------------------------------
using SoftmaxSig = Tensor(const Tensor&, bool);
using SoftmaxBwdSig = Tensor(const Tensor&, const Tensor&, bool);

struct SoftmaxFn : torch::autograd::Function<SoftmaxFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, bool log) {
    TACHYON_OP(op, "tachyon::softmax", SoftmaxSig);
    at::AutoDispatchBelowADInplaceOrView g;
    Tensor y = op.call(x, log);
    ctx->save_for_backward({y});
    ctx->saved_data["log"] = log;
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(bwd, "tachyon::softmax_backward", SoftmaxBwdSig);
    Tensor y = ctx->get_saved_variables()[0];
    Tensor dy = grads[0].scalar_type() == y.scalar_type() ? grads[0] : grads[0].to(y.scalar_type());
    return {bwd.call(y, dy, ctx->saved_data["log"].toBool()), Tensor()};
  }
};

Tensor softmax_autograd(const Tensor& x, bool log) {
  if (wants_grad({&x})) return SoftmaxFn::apply(x, log);
  TACHYON_OP(op, "tachyon::softmax", SoftmaxSig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(x, log);
}

// ---- cross-entropy -----------------------------------------------------------------------
using CeSig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, int64_t, int64_t, double, bool, double);
using CeBwdSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const OptTensor&, int64_t, int64_t, double);

// sum / mean: the forward writes the gradient in the same pass (one read of the logits) and the
// backward scales it by the incoming scalar gradient. none: the incoming gradient is per row,
// so the backward recomputes the gradient from the saved lse with it (one read, one write).
struct CrossEntropyFn : torch::autograd::Function<CrossEntropyFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& logits, const Tensor& target, int64_t reduction,
                               int64_t ignore_index, double smoothing, bool with_grad) {
    TACHYON_OP(op, "tachyon::cross_entropy", CeSig);
    at::AutoDispatchBelowADInplaceOrView g;
    const bool fused = reduction != 0;
    auto [loss, lse, dlogits] = op.call(logits, target, reduction, ignore_index, smoothing, fused, 1.0);
    if (fused) ctx->save_for_backward({dlogits});
    else ctx->save_for_backward({logits, target, lse});
    // The gradient is this node's own unless the caller asked for it as an output: then the
    // backward scales a copy instead of the saved tensor in place.
    ctx->saved_data["shared"] = fused && with_grad;
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["smoothing"] = smoothing;
    Tensor returned = with_grad ? dlogits : at::empty({0}, logits.options());
    ctx->mark_non_differentiable({lse, returned});
    return {loss, lse, returned};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto s = ctx->get_saved_variables();
    const int64_t reduction = ctx->saved_data["reduction"].toInt();
    Tensor dlogits;
    if (reduction != 0) {
      dlogits = s[0];
      if (ctx->saved_data["shared"].toBool()) dlogits = dlogits * grads[0];
      else dlogits.mul_(grads[0]);  // the saved gradient is this node's alone: scale it in place
    } else {
      TACHYON_OP(bwd, "tachyon::cross_entropy_backward", CeBwdSig);
      dlogits = bwd.call(s[0], s[1], s[2], opt(grads[0].contiguous()), 0, ctx->saved_data["ignore_index"].toInt(),
                         ctx->saved_data["smoothing"].toDouble());
    }
    return {dlogits, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor, Tensor> cross_entropy_autograd(const Tensor& logits, const Tensor& target,
                                                          int64_t reduction, int64_t ignore_index, double smoothing,
                                                          bool with_grad, double grad_scale) {
  if (wants_grad({&logits})) {
    auto out = CrossEntropyFn::apply(logits, target, reduction, ignore_index, smoothing, with_grad);
    return {out[0], out[1], out[2]};
  }
  TACHYON_OP(op, "tachyon::cross_entropy", CeSig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(logits, target, reduction, ignore_index, smoothing, with_grad, grad_scale);
}

// ---- GEMM --------------------------------------------------------------------------------
using GemmSig = Tensor(const Tensor&, const Tensor&, const OptTensor&, const OptTensor&, double, double, int64_t,
                       bool, std::optional<at::ScalarType>);

// Gradients of D = act(alpha A B^T + beta C + bias). dA runs on Tachyon's GEMM (B read in the
// other layout); dB needs A^T, a layout the GEMM does not take yet, so it runs on torch.matmul.
struct GemmFn : torch::autograd::Function<GemmFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, const OptTensor& bias,
                        const OptTensor& c, double alpha, double beta, int64_t activation, bool b_kn,
                        std::optional<at::ScalarType> out_dtype) {
    TACHYON_OP(op, "tachyon::gemm", GemmSig);
    at::AutoDispatchBelowADInplaceOrView g;
    // With an activation, keep the pre-activation z for the backward: unfused forward.
    Tensor z = op.call(a, b, bias, c, alpha, beta, 0, b_kn, out_dtype);
    Tensor y = z;
    if (activation == 1) y = handle<UnarySig>("tachyon::relu").call(z);
    if (activation == 2) y = handle<UnarySig>("tachyon::silu").call(z);
    if (activation == 3) y = handle<UnarySig>("tachyon::gelu").call(z);
    ctx->save_for_backward({a, b, activation != 0 ? z : Tensor()});
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["beta"] = beta;
    ctx->saved_data["activation"] = activation;
    ctx->saved_data["b_kn"] = b_kn;
    ctx->saved_data["has_bias"] = bias.has_value() && bias->defined();
    ctx->saved_data["has_c"] = c.has_value() && c->defined();
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TACHYON_OP(op, "tachyon::gemm", GemmSig);
    auto s = ctx->get_saved_variables();
    const Tensor &a = s[0], &b = s[1], &z = s[2];
    const double alpha = ctx->saved_data["alpha"].toDouble(), beta = ctx->saved_data["beta"].toDouble();
    const int64_t act = ctx->saved_data["activation"].toInt();
    const bool b_kn = ctx->saved_data["b_kn"].toBool();
    Tensor dy = grads[0].stride(-1) == 1 ? grads[0] : grads[0].contiguous();
    Tensor dz = dy;
    if (act == 1) dz = at::threshold_backward(dy, z, 0);
    if (act == 2) dz = handle<BinarySig>("tachyon::silu_backward").call(dy, z);
    if (act == 3) dz = handle<BinarySig>("tachyon::gelu_backward").call(dy, z);
    const int64_t k = a.size(-1), n = b_kn ? b.size(1) : b.size(0);
    Tensor dz2 = dz.reshape({-1, n});
    // needs_input_grad counts the tensor inputs present: a, b, then bias and c if given.
    const bool has_bias = ctx->saved_data["has_bias"].toBool(), has_c = ctx->saved_data["has_c"].toBool();
    const bool want_dbias = has_bias && ctx->needs_input_grad(2);
    const bool want_dc = has_c && ctx->needs_input_grad(has_bias ? 3 : 2);
    Tensor da, db, dbias, dc;
    if (ctx->needs_input_grad(0)) {
      // dA = alpha dZ B (nk) or alpha dZ B^T (kn): B read in the other layout.
      if (dz.scalar_type() == b.scalar_type()) {
        da = op.call(dz, b, std::nullopt, std::nullopt, alpha, 0.0, 0, !b_kn, a.scalar_type());
      } else {
        Tensor bm = b_kn ? b.t() : b;
        da = at::matmul(dz.to(b.scalar_type()), bm).mul_(alpha).to(a.scalar_type());
      }
    }
    if (ctx->needs_input_grad(1)) {
      Tensor a2 = a.reshape({-1, k});
      Tensor g = dz2.to(a.scalar_type());
      db = b_kn ? at::matmul(a2.t(), g) : at::matmul(g.t(), a2);
      if (alpha != 1.0) db.mul_(alpha);
      db = db.to(b.scalar_type());
    }
    if (want_dbias) dbias = dz2.sum(0, false, at::kFloat);
    if (want_dc) dc = beta == 1.0 ? dz : dz * beta;
    return {da, db, dbias, dc, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

Tensor gemm_autograd(const Tensor& a, const Tensor& b, const OptTensor& bias, const OptTensor& c, double alpha,
                     double beta, int64_t activation, bool b_kn, std::optional<at::ScalarType> out_dtype) {
  if (wants_grad({&a, &b}, {&bias, &c})) return GemmFn::apply(a, b, bias, c, alpha, beta, activation, b_kn, out_dtype);
  TACHYON_OP(op, "tachyon::gemm", GemmSig);
  at::AutoDispatchBelowADInplaceOrView g;
  return op.call(a, b, bias, c, alpha, beta, activation, b_kn, out_dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(tachyon, Autograd, m) {
  m.impl("silu", &unary_autograd<SiluFn, kSilu>);
  m.impl("gelu", &unary_autograd<GeluFn, kGelu>);
  m.impl("relu", &unary_autograd<ReluFn, kRelu>);
  m.impl("swiglu", &binary_autograd<SwigluFn, kSwiglu>);
  m.impl("add", &binary_autograd<AddFn, kAdd>);
  m.impl("mul", &binary_autograd<MulFn, kMul>);
  m.impl("rms_norm", &rms_norm_autograd);
  m.impl("layer_norm", &layer_norm_autograd);
  m.impl("softmax", &softmax_autograd);
  m.impl("cross_entropy", &cross_entropy_autograd);
  m.impl("gemm", &gemm_autograd);
}

}  // namespace tachyon::torch_glue
