"""tachyon.patch(model): swap a model's norms (and optionally its loss) for Tachyon's, in place.

    model = tachyon.patch(model)                 # norms only
    model = tachyon.patch(model, loss=True)      # norms + the Hugging Face model's loss
    model._tachyon_patched                       # what was replaced (counts), what was skipped

Norms. Each matching submodule is replaced by a tachyon.nn module that holds the SAME Parameter
objects (an optimizer built before the patch keeps working, state_dict keys do not change) and
the old module's hooks and training flag. Matched:
- torch.nn.RMSNorm / torch.nn.LayerNorm over one (the last) dimension, whose forward is torch's
  own (subclasses that override forward are left alone);
- Hugging Face RMSNorm modules: a class whose name ends in "RMSNorm", with a 1-D `weight`
  Parameter and `variance_epsilon` or `eps`, and whose arithmetic is one Tachyon computes:
    * Llama-style (LlamaRMSNorm, Qwen2RMSNorm, Qwen3RMSNorm, MistralRMSNorm, and any class whose
      forward is the same code): in float32, x * rsqrt(mean(x^2) + eps); the result is rounded
      to the input's dtype and THEN multiplied by the weight: ``weight * h.to(input_dtype)``.
      Tachyon rounds once, after the multiply (weight_offset=0). Rounding difference: in
      bf16 / fp16 Tachyon's output differs from Hugging Face's by at most about one ulp of the
      dtype per element (Hugging Face rounds twice; Tachyon is the more accurate). In float32 the
      two agree to float32 rounding. The output dtype follows Hugging Face's promotion
      (promote_types(weight, x)); it equals x's dtype unless the weight is wider than x.
    * Gemma-style (GemmaRMSNorm, Gemma2RMSNorm, Gemma3RMSNorm, and any class with the same
      forward): all in float32, x * rsqrt(mean(x^2) + eps) * (1 + weight), rounded once to x's
      dtype: Tachyon's weight_offset=1.0, the same arithmetic (agreement to float32 rounding).
    * float32-scale style ((weight * h).to(input_dtype), e.g. OLMo-2): weight_offset=0, one
      rounding, as Tachyon.
  Any other *RMSNorm class (Gemma3n's with_scale, weightless norms, gated norms, ...) is left
  alone and listed in ``_tachyon_patched["skipped"]`` with the reason. So is a module whose
  ``forward`` was overridden on the instance (e.g. by an accelerate offload hook).

Loss (loss=True, Hugging Face transformers models). transformers 5.x computes a model's loss
with ``self.loss_function(...)``, a property that returns the instance's ``_loss_function`` if
set, else ``LOSS_MAPPING[self.loss_type]`` (ForCausalLMLoss, ForMaskedLMLoss, ...), which call
``fixed_cross_entropy`` -> torch.nn.functional.cross_entropy. The patch sets the property on the
INSTANCE (its setter stores ``_loss_function``): nothing global is modified, other models are
unaffected, and a deep copy of the patched model keeps the patch. The replacements reproduce
ForCausalLMLoss (the label shift, ignore_index, ``num_items_in_batch`` -> sum / count),
ForMaskedLMLoss and ForTokenClassification with tachyon.cross_entropy. They do not upcast the
logits to float32 first (Hugging Face's ``logits.float()``): the kernel reads bf16 / fp16 logits
and computes in float32, which is exact (the upcast is lossless) and saves the float32 copy;
the logits' gradient is rounded once to their dtype, as Hugging Face's is. Other loss types
(sequence classification, detection, ...) raise NotImplementedError.
"""
from __future__ import annotations

import inspect
import re
import textwrap
from typing import Dict, Optional

import torch
from torch import nn

from . import functional as F
from .nn import LayerNorm, RMSNorm

__all__ = ["patch", "HFRMSNorm"]

_LLAMA, _GEMMA, _FP32_SCALE = "llama", "gemma", "fp32_scale"

# Classes whose forward was read in transformers 5.17 and 5.24 (identical in both).
_KNOWN_HF_RMSNORMS = {
    "LlamaRMSNorm": _LLAMA,
    "Qwen2RMSNorm": _LLAMA,
    "Qwen3RMSNorm": _LLAMA,
    "MistralRMSNorm": _LLAMA,
    "GemmaRMSNorm": _GEMMA,
    "Gemma2RMSNorm": _GEMMA,
    "Gemma3RMSNorm": _GEMMA,
}

# Other classes are recognised by their forward's code (whitespace and comments dropped).
_BODY_LLAMA = (
    "input_dtype = hidden_states.dtype hidden_states = hidden_states.to(torch.float32) "
    "variance = hidden_states.pow(2).mean(-1, keepdim=True) "
    "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon) "
)
_FORWARD_BODIES = {
    _BODY_LLAMA + "return self.weight * hidden_states.to(input_dtype)": _LLAMA,
    _BODY_LLAMA + "return (self.weight * hidden_states).to(input_dtype)": _FP32_SCALE,
    _BODY_LLAMA + "return (self.weight.to(torch.float32) * hidden_states).to(input_dtype)": _FP32_SCALE,
    "output = self._norm(x.float()) output = output * (1.0 + self.weight.float()) return output.type_as(x)": _GEMMA,
}
_GEMMA_NORM_BODY = "return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)"


def _body(fn) -> Optional[str]:
    """A method's body, comments, docstrings and whitespace runs dropped; None without source."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    src = re.sub(r'("""|\'\'\')[\s\S]*?\1', "", src)
    src = re.sub(r"#[^\n]*", "", src)
    m = re.search(r"def \w+\([\s\S]*?\)\s*(->[^:]+)?:", src)
    if m is None:
        return None
    return re.sub(r"\s+", " ", src[m.end():]).strip()


def _hf_style(module: nn.Module) -> Optional[str]:
    cls = type(module)
    style = _KNOWN_HF_RMSNORMS.get(cls.__name__)
    if style is not None:
        return style
    style = _FORWARD_BODIES.get(_body(cls.forward) or "")
    if style == _GEMMA and _body(getattr(cls, "_norm", None)) != _GEMMA_NORM_BODY:
        return None
    return style


class HFRMSNorm(RMSNorm):
    """tachyon.nn.RMSNorm standing in for a Hugging Face RMSNorm module (made by patch()).

    Keeps the source module's ``variance_epsilon`` / ``eps`` attribute names readable and, for
    the Llama-style classes, Hugging Face's output dtype (promote_types(weight, x))."""

    def __init__(self, hidden_size: int, eps: float, *, weight_offset: float = 0.0, promote_output: bool = False,
                 source: str = "", device=None, dtype=None) -> None:
        super().__init__(hidden_size, eps, True, device=device, dtype=dtype, weight_offset=weight_offset)
        self.promote_output = promote_output
        self.source = source

    @property
    def variance_epsilon(self) -> float:
        return self.eps

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None):
        out = super().forward(x, residual)
        if self.promote_output:
            dt = torch.promote_types(self.weight.dtype, x.dtype)
            if residual is None:
                return out if out.dtype == dt else out.to(dt)
            return (out[0] if out[0].dtype == dt else out[0].to(dt)), out[1]
        return out

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", source={self.source}" if self.source else "")


_HOOK_DICTS = (
    "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks", "_state_dict_hooks",
    "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
)


def _adopt(new: nn.Module, old: nn.Module) -> nn.Module:
    """Give `new` the old module's parameters (the same objects), hooks and training flag."""
    for name, p in old._parameters.items():
        new._parameters[name] = p
    for name in _HOOK_DICTS:
        if name in old.__dict__:
            new.__dict__[name] = old.__dict__[name]
    new.train(old.training)
    return new


def _convert(module: nn.Module):
    """(new module, None), (None, reason to record) or (None, None) for a module we do not touch."""
    if isinstance(module, (RMSNorm, LayerNorm)):
        return None, None  # already Tachyon's
    cls = type(module)
    is_torch_norm = isinstance(module, (nn.RMSNorm, nn.LayerNorm))
    is_hf_norm = not is_torch_norm and cls.__name__.endswith("RMSNorm")
    if not (is_torch_norm or is_hf_norm):
        return None, None
    if "forward" in module.__dict__:
        return None, "forward overridden on the instance (a hook, e.g. accelerate's offload?)"

    if isinstance(module, nn.RMSNorm):
        if cls.forward is not nn.RMSNorm.forward:
            return None, None
        if len(module.normalized_shape) != 1:
            return None, f"normalized_shape {tuple(module.normalized_shape)} is not the last dimension only"
        new = RMSNorm(module.normalized_shape, module.eps, module.elementwise_affine, device="meta")
        return _adopt(new, module), None
    if isinstance(module, nn.LayerNorm):
        if cls.forward is not nn.LayerNorm.forward:
            return None, None
        if len(module.normalized_shape) != 1:
            return None, f"normalized_shape {tuple(module.normalized_shape)} is not the last dimension only"
        new = LayerNorm(module.normalized_shape, module.eps, module.elementwise_affine,
                        bias=module.bias is not None, device="meta")
        return _adopt(new, module), None

    # A Hugging Face RMSNorm.
    weight = module._parameters.get("weight")
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if not isinstance(weight, nn.Parameter) or weight.dim() != 1 or not isinstance(eps, (int, float)):
        return None, "no 1-D weight Parameter and float variance_epsilon / eps"
    if set(module._parameters) != {"weight"} or module._buffers or module._modules:
        return None, "holds parameters, buffers or submodules other than weight"
    style = _hf_style(module)
    if style is None:
        return None, f"{cls.__name__}'s arithmetic is not one Tachyon's rms_norm reproduces"
    new = HFRMSNorm(weight.shape[0], float(eps), weight_offset=1.0 if style == _GEMMA else 0.0,
                    promote_output=style == _LLAMA, source=cls.__name__, device="meta")
    return _adopt(new, module), None


def _patch_norms(model: nn.Module, record: dict) -> None:
    replaced: Dict[str, int] = record["replaced"]
    done: Dict[int, nn.Module] = {}  # a module shared by several parents is replaced once

    def visit(parent: nn.Module, prefix: str) -> None:
        for name, child in list(parent._modules.items()):
            if child is None:
                continue
            path = f"{prefix}.{name}" if prefix else name
            if id(child) in done:
                if done[id(child)] is not child:
                    setattr(parent, name, done[id(child)])
                continue
            new, reason = _convert(child)
            if new is not None:
                setattr(parent, name, new)
                done[id(child)] = new
                key = type(child).__name__
                replaced[key] = replaced.get(key, 0) + 1
                if isinstance(new, RMSNorm):
                    record["rms_norm"] += 1
                else:
                    record["layer_norm"] += 1
            else:
                done[id(child)] = child
                if reason is not None:
                    record["skipped"][path] = f"{type(child).__name__}: {reason}"
                visit(child, path)

    visit(model, "")


# ----------------------------------------------------------------------------------------------
# Loss: the Hugging Face loss functions that go through fixed_cross_entropy, on tachyon.cross_entropy.

def _fixed_cross_entropy(source: torch.Tensor, target: torch.Tensor, num_items_in_batch=None,
                         ignore_index: int = -100, **kwargs) -> torch.Tensor:
    # transformers' fixed_cross_entropy: extra kwargs are accepted and ignored, as there.
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = F.cross_entropy(source, target, reduction=reduction, ignore_index=ignore_index)
    if reduction == "sum":
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


def tachyon_causal_lm_loss(logits, labels, vocab_size: int, num_items_in_batch=None, ignore_index: int = -100,
                           shift_labels=None, **kwargs) -> torch.Tensor:
    """transformers' ForCausalLMLoss on tachyon.cross_entropy (no float32 copy of the logits)."""
    if shift_labels is None:
        labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()
    logits = logits.reshape(-1, vocab_size)
    shift_labels = shift_labels.reshape(-1).to(logits.device)
    return _fixed_cross_entropy(logits, shift_labels, num_items_in_batch, ignore_index, **kwargs)


def tachyon_masked_lm_loss(logits, labels, vocab_size: int, num_items_in_batch=None, ignore_index: int = -100,
                           **kwargs) -> torch.Tensor:
    """transformers' ForMaskedLMLoss on tachyon.cross_entropy."""
    logits = logits.reshape(-1, vocab_size)
    labels = labels.reshape(-1).to(logits.device)
    return _fixed_cross_entropy(logits, labels, num_items_in_batch, ignore_index, **kwargs)


def tachyon_token_classification_loss(logits, labels, config, **kwargs) -> torch.Tensor:
    """transformers' ForTokenClassification on tachyon.cross_entropy."""
    logits = logits.reshape(-1, config.num_labels)
    labels = labels.reshape(-1).to(logits.device)
    return _fixed_cross_entropy(logits, labels, **kwargs)


for _f in (tachyon_causal_lm_loss, tachyon_masked_lm_loss, tachyon_token_classification_loss):
    _f._tachyon = True

_LOSS_BY_NAME = {
    "ForCausalLMLoss": tachyon_causal_lm_loss,
    "ForMaskedLMLoss": tachyon_masked_lm_loss,
    "ForTokenClassification": tachyon_token_classification_loss,
}


def _patch_loss(model: nn.Module) -> str:
    if not hasattr(model, "loss_function"):
        raise TypeError(f"tachyon.patch(loss=True): {type(model).__name__} has no `loss_function` "
                        "(a Hugging Face transformers model computes its loss through one)")
    current = model.loss_function
    if getattr(current, "_tachyon", False):
        return current.__name__
    name = getattr(current, "__name__", type(current).__name__)
    new = None
    try:
        from transformers.loss import loss_utils
        for hf_name, fn in _LOSS_BY_NAME.items():
            if current is getattr(loss_utils, hf_name, object()):
                new = fn
    except ImportError:  # pragma: no cover - a model with loss_function but no transformers
        pass
    if new is None:
        raise NotImplementedError(
            f"tachyon.patch(loss=True): {type(model).__name__}.loss_function is {name}; Tachyon replaces "
            f"{', '.join(_LOSS_BY_NAME)} only"
        )
    try:
        model.loss_function = new  # PreTrainedModel's property setter: stored on the instance
    except AttributeError as e:
        raise NotImplementedError(
            f"tachyon.patch(loss=True): cannot set {type(model).__name__}.loss_function on the instance ({e})"
        ) from None
    if model.loss_function is not new:
        raise NotImplementedError(f"tachyon.patch(loss=True): setting {type(model).__name__}.loss_function "
                                  "did not take effect on the instance")
    return name


def patch(model: nn.Module, *, norms: bool = True, loss: bool = False) -> nn.Module:
    """Swap `model`'s norms (and with loss=True its Hugging Face loss) for Tachyon's, in place.

    Returns the model. ``model._tachyon_patched`` records what was done, summed over calls:
    ``{"rms_norm": n, "layer_norm": n, "replaced": {source class name: n}, "skipped": {module
    path: reason}, "loss": the replaced Hugging Face loss's name or None}``. The root module
    itself is never replaced (patch its parent). See the module docstring for what is matched
    and the rounding differences.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"tachyon.patch: expected a torch.nn.Module, got {type(model).__name__}")
    record = getattr(model, "_tachyon_patched", None)
    if not isinstance(record, dict):
        record = {"rms_norm": 0, "layer_norm": 0, "replaced": {}, "skipped": {}, "loss": None}
    if norms:
        record["skipped"] = {}
        _patch_norms(model, record)
    if loss:
        record["loss"] = _patch_loss(model)
    model._tachyon_patched = record
    return model
