"""Tachyon's kernels as differentiable functions on torch tensors (CUDA only).

Each function calls one torch.ops.tachyon operator (autograd, torch.compile, export and CUDA
graphs come with it) on the current stream of the inputs' device. Rows are the last
dimension; leading dimensions are kept. The inner dimension must be contiguous; any row
stride and storage offset is taken as it is. Invalid arguments raise tachyon.Error, naming the
op and the argument, before anything runs.
"""
import sys
from typing import Optional

import torch

from ._errors import translate

# Eager calls go through tachyon._C (the operator called through torch's dispatcher from C++);
# under torch.compile / export the same operators are called as torch.ops.tachyon.* so that the
# graph holds one node per op. Both reach the same kernels, autograd formulas and dispatch keys.
_C = sys.modules["tachyon._C"]
_compiling = torch.compiler.is_compiling
_ops = torch.ops.tachyon
_add, _mul, _relu = _ops.add.default, _ops.mul.default, _ops.relu.default
_silu, _gelu, _swiglu = _ops.silu.default, _ops.gelu.default, _ops.swiglu.default
_rms_norm, _layer_norm = _ops.rms_norm.default, _ops.layer_norm.default
_softmax, _cross_entropy = _ops.softmax.default, _ops.cross_entropy.default
_gemm, _lse_combine = _ops.gemm.default, _ops.lse_combine.default

_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}
_ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "silu": 2, "gelu_tanh": 3, "gelu": 3}


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6, *,
             residual: Optional[torch.Tensor] = None, weight_offset: float = 0.0):
    """y = x * rsqrt(mean(x^2) + eps) * (weight + weight_offset) over the last dimension.

    weight_offset=1 is Gemma's convention (the weight stored as an offset from one). The weight
    may be float32 beside 16-bit x (autocast training); y has x's dtype. With `residual`, the
    pre-norm block's add is fused: h = x + residual is normalised and returned as the new
    residual stream (in the residual's dtype): the result is (y, h).
    """
    try:
        if not _compiling():
            return _C.rms_norm(x, weight, residual, eps, weight_offset)
        y, h, _ = _rms_norm(x, weight, residual, eps, weight_offset)
    except RuntimeError as e:
        raise translate(e) from None
    return y if residual is None else (y, h)


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dimension (biased variance, as torch.nn.functional.layer_norm)."""
    try:
        if not _compiling():
            return _C.layer_norm(x, weight, bias, eps)
        return _layer_norm(x, weight, bias, eps)[0]
    except RuntimeError as e:
        raise translate(e) from None


def _softmax_any(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    last = x.dim() - 1
    if dim < 0:
        dim += x.dim()
    try:
        if dim == last or x.dim() == 0:
            return _C.softmax(x, log) if not _compiling() else _softmax(x, log)
        return _softmax(x.transpose(dim, last).contiguous(), log).transpose(dim, last)
    except RuntimeError as e:
        raise translate(e) from None


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax over `dim` (the last dimension is the fast path; others are transposed to it)."""
    return _softmax_any(x, dim, False)


def log_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log_softmax over `dim`, as softmax."""
    return _softmax_any(x, dim, True)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, *, reduction: str = "mean",
                  ignore_index: int = -100, label_smoothing: float = 0.0) -> torch.Tensor:
    """Cross-entropy of logits (..., C) against integer targets (...), classes on the LAST dimension.

    PyTorch semantics otherwise (reduction none / sum / mean over non-ignored rows, ignore_index,
    label_smoothing); the loss is float32. When the logits require grad and the reduction is sum
    or mean, the forward writes the gradient in the same pass over the logits and the backward
    only scales it by the incoming gradient. Targets outside [0, C) give NaN for that row
    (PyTorch raises a device assert instead).
    """
    try:
        r = _REDUCTIONS[reduction]
    except KeyError:
        raise ValueError(f"cross_entropy: reduction must be one of none, sum, mean; got {reduction!r}") from None
    try:
        if not _compiling():
            return _C.cross_entropy(logits, target, r, ignore_index, label_smoothing)
        return _cross_entropy(logits, target, r, ignore_index, label_smoothing, False, 1.0)[0]
    except RuntimeError as e:
        raise translate(e) from None


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, *,
           activation: Optional[str] = None) -> torch.Tensor:
    """act(x @ weight.T + bias) on Tachyon's GEMM, weight (out_features, in_features) as nn.Linear.

    activation: None, "relu", "silu" or "gelu_tanh" (fused into the GEMM's epilogue when no
    gradient is needed). bf16 / fp16 x and weight. Backward: dx runs on Tachyon's GEMM; dweight
    needs x transposed, a layout the GEMM does not take yet, so it runs on torch.matmul.
    """
    try:
        act = _ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(f"linear: activation must be None, 'relu', 'silu' or 'gelu_tanh'; got {activation!r}") from None
    try:
        if not _compiling():
            return _C.linear(x, weight, bias, act)
        return _gemm(x, weight, bias, None, 1.0, 0.0, act, False, None)
    except RuntimeError as e:
        raise translate(e) from None


def silu(x: torch.Tensor) -> torch.Tensor:
    """x * sigmoid(x)."""
    try:
        return _C.silu(x) if not _compiling() else _silu(x)
    except RuntimeError as e:
        raise translate(e) from None


def gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation (torch's gelu(approximate="tanh"))."""
    try:
        return _C.gelu(x) if not _compiling() else _gelu(x)
    except RuntimeError as e:
        raise translate(e) from None


def relu(x: torch.Tensor) -> torch.Tensor:
    try:
        return _C.relu(x) if not _compiling() else _relu(x)
    except RuntimeError as e:
        raise translate(e) from None


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up, the gated MLP activation of Llama-style models (same shapes and dtype)."""
    try:
        return _C.swiglu(gate, up) if not _compiling() else _swiglu(gate, up)
    except RuntimeError as e:
        raise translate(e) from None


def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a + b (same shape and dtype; no broadcasting)."""
    try:
        return _C.add(a, b) if not _compiling() else _add(a, b)
    except RuntimeError as e:
        raise translate(e) from None


def mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a * b (same shape and dtype; no broadcasting)."""
    try:
        return _C.mul(a, b) if not _compiling() else _mul(a, b)
    except RuntimeError as e:
        raise translate(e) from None


def lse_combine(partial: torch.Tensor) -> torch.Tensor:
    """log(sum_s exp(partial[s])) per row of float32 partial (shards, rows): vocabulary-parallel lse."""
    try:
        return _lse_combine(partial)
    except RuntimeError as e:
        raise translate(e) from None
