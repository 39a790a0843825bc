"""Fake (meta) implementations of every tachyon operator: output shapes, dtypes and strides
without running anything, for FakeTensorMode, torch.compile and torch.export. They mirror the
CUDA implementations in python/csrc/ops_*.cpp: outputs are contiguous, y takes x's dtype,
row statistics are float32 over all dimensions but the last.
"""
import torch
from torch.library import register_fake


def _like(t):
    return t.new_empty(t.shape)


def _rows(t):
    return t.new_empty(t.shape[:-1], dtype=torch.float32)


def _none(t):
    return t.new_empty((0,))


for _name in ("relu", "silu", "gelu"):
    register_fake(f"tachyon::{_name}")(lambda x: _like(x))
    register_fake(f"tachyon::{_name}.out")(lambda x, *, out: out)
for _name in ("add", "mul"):
    register_fake(f"tachyon::{_name}")(lambda a, b: _like(a))
    register_fake(f"tachyon::{_name}.out")(lambda a, b, *, out: out)
register_fake("tachyon::swiglu")(lambda gate, up: _like(gate))
register_fake("tachyon::swiglu.out")(lambda gate, up, *, out: out)
register_fake("tachyon::silu_backward")(lambda dy, x: _like(x))
register_fake("tachyon::gelu_backward")(lambda dy, x: _like(x))
register_fake("tachyon::swiglu_backward")(lambda dy, gate, up: (_like(gate), _like(up)))


@register_fake("tachyon::rms_norm")
def _rms_norm(x, weight=None, residual=None, eps=1e-6, weight_offset=0.0):
    residual_out = residual.new_empty(x.shape) if residual is not None else _none(x)
    return _like(x), residual_out, _rows(x)


@register_fake("tachyon::rms_norm.out")
def _rms_norm_out(x, weight, residual, eps, weight_offset, *, y, residual_out=None, rstd=None):
    return None


@register_fake("tachyon::rms_norm_backward")
def _rms_norm_backward(dy, x, weight, rstd, dresidual=None, weight_offset=0.0, weight_grad=True):
    dw = _like(weight) if weight is not None and weight_grad else _none(x)
    return _like(x), dw


@register_fake("tachyon::layer_norm")
def _layer_norm(x, weight=None, bias=None, eps=1e-5):
    return _like(x), _rows(x), _rows(x)


@register_fake("tachyon::layer_norm.out")
def _layer_norm_out(x, weight, bias, eps, *, y, mean=None, rstd=None):
    return None


@register_fake("tachyon::layer_norm_backward")
def _layer_norm_backward(dy, x, weight, mean, rstd, weight_grad=True, bias_grad=True):
    dw = _like(weight) if weight is not None and weight_grad else _none(x)
    ref = weight if weight is not None else x
    db = ref.new_empty((x.shape[-1],)) if bias_grad else _none(x)
    return _like(x), dw, db


register_fake("tachyon::softmax")(lambda x, log=False: _like(x))
register_fake("tachyon::softmax.out")(lambda x, log=False, *, out: out)
register_fake("tachyon::softmax_backward")(lambda y, dy, log=False: _like(y))


@register_fake("tachyon::cross_entropy")
def _cross_entropy(logits, target, reduction=2, ignore_index=-100, label_smoothing=0.0, with_grad=False,
                   grad_scale=1.0):
    rows = logits.shape[:-1]
    loss = logits.new_empty(rows if reduction == 0 else (), dtype=torch.float32)
    lse = logits.new_empty(rows, dtype=torch.float32)
    dlogits = _like(logits) if with_grad else _none(logits)
    return loss, lse, dlogits


@register_fake("tachyon::cross_entropy_backward")
def _cross_entropy_backward(logits, target, lse, dloss, reduction=2, ignore_index=-100, label_smoothing=0.0):
    return _like(logits)


register_fake("tachyon::lse_combine")(lambda partial: partial.new_empty((partial.shape[1],)))


@register_fake("tachyon::gemm")
def _gemm(a, b, bias=None, c=None, alpha=1.0, beta=0.0, activation=0, b_kn=False, out_dtype=None):
    n = b.shape[1] if b_kn else b.shape[0]
    return a.new_empty((*a.shape[:-1], n), dtype=out_dtype if out_dtype is not None else a.dtype)


@register_fake("tachyon::gemm.out")
def _gemm_out(a, b, bias=None, c=None, alpha=1.0, beta=0.0, activation=0, b_kn=False, *, out):
    return out
