"""Drop-in torch.nn modules on Tachyon's kernels.

Each module subclasses its torch counterpart (so ``isinstance(m, torch.nn.LayerNorm)`` and the
code that relies on it, e.g. weight-decay parameter groups, keep working), takes the same
constructor arguments, holds the same parameters under the same state_dict keys and prints the
same repr; only ``forward`` changes: it calls ``tachyon.functional`` and nothing else (no
fallback to torch). The kernels run on CUDA tensors only; a CPU input raises an error.

    RMSNorm(normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None, *, weight_offset=0.0)
    LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None)
    CrossEntropyLoss(weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                     label_smoothing=0.0)
    Linear(in_features, out_features, bias=True, device=None, dtype=None)
    SwiGLU(in_features, hidden_features, out_features=None, bias=False, device=None, dtype=None)

What differs from torch:
- normalized_shape must name the last dimension only (an int or a 1-tuple): ValueError otherwise.
- RMSNorm(eps=None) uses the epsilon torch's kernels actually use: float32's machine epsilon for
  float32 / bfloat16 / float16 inputs (torch's "opmath" type), float64's for float64 inputs.
  (torch's documentation says ``torch.finfo(x.dtype).eps``; its implementation, measured on torch
  2.11, adds float32's epsilon to a bfloat16 input's mean square.)
- RMSNorm's extra keyword ``weight_offset``: y = x * rstd * (weight + weight_offset); Gemma stores
  its norm weights as an offset from one (weight_offset=1.0). The weight is then initialised to
  ``1 - weight_offset`` so a fresh module is still the identity scale.
- CrossEntropyLoss: class weights (``weight=``) and class-probability (float) targets are not
  supported; the loss is float32 whatever the logits' dtype (torch returns the logits' dtype).
- Linear / SwiGLU: Tachyon's GEMM takes bfloat16 / float16 inputs only (tachyon.Error otherwise).
"""
from __future__ import annotations

import numbers
from typing import Optional, Tuple, Union

import torch
from torch import nn

from . import functional as F

__all__ = ["RMSNorm", "LayerNorm", "CrossEntropyLoss", "Linear", "SwiGLU"]

_ShapeArg = Union[int, Tuple[int, ...], list, torch.Size]


def _last_dim_shape(cls_name: str, normalized_shape: _ShapeArg) -> Tuple[int]:
    if isinstance(normalized_shape, numbers.Integral):
        shape = (int(normalized_shape),)
    else:
        shape = tuple(int(s) for s in normalized_shape)
    if len(shape) != 1:
        raise ValueError(
            f"tachyon.nn.{cls_name} normalizes over the last dimension only: normalized_shape must be an int "
            f"or a 1-tuple, got {normalized_shape!r}"
        )
    return shape


def default_rms_norm_eps(dtype: torch.dtype) -> float:
    """The epsilon torch's rms_norm adds when eps is None: the machine epsilon of the input's
    compute ("opmath") type, float64 for float64 inputs and float32 for everything else."""
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps


class RMSNorm(nn.RMSNorm):
    """torch.nn.RMSNorm on Tachyon's kernel, plus Gemma's ``weight_offset`` and a fused residual add.

    ``forward(x)`` returns y; ``forward(x, residual)`` normalises h = x + residual and returns
    ``(y, h)`` (the pre-norm block's add fused into the norm).
    """

    def __init__(self, normalized_shape: _ShapeArg, eps: Optional[float] = None, elementwise_affine: bool = True,
                 device=None, dtype=None, *, weight_offset: float = 0.0) -> None:
        shape = _last_dim_shape(type(self).__name__, normalized_shape)
        if weight_offset and not elementwise_affine:
            raise ValueError("tachyon.nn.RMSNorm: weight_offset needs a weight (elementwise_affine=True)")
        super().__init__(shape, eps, elementwise_affine, device=device, dtype=dtype)
        self.weight_offset = float(weight_offset)
        if self.weight_offset:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()  # ones
        offset = getattr(self, "weight_offset", 0.0)
        if offset and self.weight is not None:
            with torch.no_grad():
                self.weight.sub_(offset)  # effective scale weight + offset == 1

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None):
        eps = self.eps if self.eps is not None else default_rms_norm_eps(x.dtype)
        if residual is None:
            return F.rms_norm(x, self.weight, eps, weight_offset=self.weight_offset)
        return F.rms_norm(x, self.weight, eps, residual=residual, weight_offset=self.weight_offset)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.weight_offset:
            s += f", weight_offset={self.weight_offset}"
        return s


class LayerNorm(nn.LayerNorm):
    """torch.nn.LayerNorm (last dimension) on Tachyon's kernel."""

    def __init__(self, normalized_shape: _ShapeArg, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        shape = _last_dim_shape(type(self).__name__, normalized_shape)
        super().__init__(shape, eps, elementwise_affine, bias, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight, self.bias, self.eps)


class CrossEntropyLoss(nn.CrossEntropyLoss):
    """torch.nn.CrossEntropyLoss on Tachyon's fused kernel (integer targets, no class weights).

    Input layouts as torch: (C), (N, C) or (N, C, d1, ...) with the classes on dimension 1 (moved
    to the last dimension, a copy, for the kernel). The loss is float32.
    """

    def __init__(self, weight: Optional[torch.Tensor] = None, size_average=None, ignore_index: int = -100,
                 reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        if weight is not None:
            raise NotImplementedError("tachyon.nn.CrossEntropyLoss: class weights (weight=...) are not supported")
        super().__init__(None, size_average, ignore_index, reduce, reduction, label_smoothing)
        if self.reduction not in ("none", "sum", "mean"):
            raise ValueError(f"tachyon.nn.CrossEntropyLoss: reduction must be none, sum or mean; got {self.reduction!r}")

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if target.is_floating_point():
            raise NotImplementedError(
                "tachyon.nn.CrossEntropyLoss: class-probability (floating-point) targets are not supported; "
                "pass class indices"
            )
        kw = dict(reduction=self.reduction, ignore_index=self.ignore_index, label_smoothing=self.label_smoothing)
        if input.dim() == 1:  # unbatched (C) with a scalar target
            loss = F.cross_entropy(input.unsqueeze(0), target.reshape(1), **kw)
            return loss.squeeze(0) if self.reduction == "none" else loss
        if input.dim() > 2:  # (N, C, d1, ...): classes to the last dimension
            input = input.movedim(1, -1).contiguous()
        return F.cross_entropy(input, target, **kw)


class Linear(nn.Linear):
    """torch.nn.Linear on Tachyon's GEMM (bfloat16 / float16 inputs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class SwiGLU(nn.Module):
    """The Llama-style gated MLP: down_proj(silu(gate_proj(x)) * up_proj(x)).

    state_dict keys gate_proj.weight, up_proj.weight, down_proj.weight (and .bias with bias=True),
    as Hugging Face's LlamaMLP. The projections are tachyon.nn.Linear (subclasses of nn.Linear),
    the activation tachyon.swiglu.
    """

    def __init__(self, in_features: int, hidden_features: int, out_features: Optional[int] = None,
                 bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        factory_kwargs = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.out_features = in_features if out_features is None else out_features
        self.gate_proj = Linear(in_features, hidden_features, bias=bias, **factory_kwargs)
        self.up_proj = Linear(in_features, hidden_features, bias=bias, **factory_kwargs)
        self.down_proj = Linear(hidden_features, self.out_features, bias=bias, **factory_kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.swiglu(self.gate_proj(x), self.up_proj(x)))

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, hidden_features={self.hidden_features}, "
                f"out_features={self.out_features}, bias={self.gate_proj.bias is not None}")
