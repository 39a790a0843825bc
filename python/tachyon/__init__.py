"""Tachyon: speed-of-light Hopper kernels for PyTorch.

    import tachyon
    y = tachyon.rms_norm(x, weight)            # differentiable, torch.compile-able
    loss = tachyon.cross_entropy(logits, target)
    tachyon.patch(hf_model)                     # swap a Hugging Face model's norms in place

Operators live in torch.ops.tachyon (also `tachyon.ops`); drop-in modules in tachyon.nn.
"""
from . import _library

_C = _library.load()

from . import _fake  # noqa: E402,F401  (fake implementations for torch.compile / export)
from ._errors import Error  # noqa: E402

_C._set_error_type(Error)
from .functional import (  # noqa: E402
    add,
    cross_entropy,
    gelu,
    layer_norm,
    linear,
    log_softmax,
    lse_combine,
    mul,
    relu,
    rms_norm,
    silu,
    softmax,
    swiglu,
)
from . import functional, nn  # noqa: E402
from .patch import patch  # noqa: E402

import torch as _torch  # noqa: E402

ops = _torch.ops.tachyon
__version__ = "0.1.0"

__all__ = [
    "Error", "ops", "functional", "nn", "patch",
    "rms_norm", "layer_norm", "softmax", "log_softmax", "cross_entropy", "linear",
    "silu", "gelu", "relu", "swiglu", "add", "mul", "lse_combine",
]
