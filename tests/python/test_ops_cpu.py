"""What holds without a GPU: the package imports, every operator is registered with its schema,
fake implementations give the shapes / dtypes / strides of the CUDA ones, opcheck's schema and
fake-tensor checks pass on fake inputs, and bad arguments raise tachyon.Error naming the op and
the argument (CPU tensors reach the operators and are refused before anything runs)."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import tachyon

OPS = {
    "add": ["default", "out"], "mul": ["default", "out"], "relu": ["default", "out"],
    "silu": ["default", "out"], "gelu": ["default", "out"], "swiglu": ["default", "out"],
    "silu_backward": ["default"], "gelu_backward": ["default"], "swiglu_backward": ["default"],
    "rms_norm": ["default", "out"], "rms_norm_backward": ["default"],
    "layer_norm": ["default", "out"], "layer_norm_backward": ["default"],
    "softmax": ["default", "out"], "softmax_backward": ["default"],
    "cross_entropy": ["default"], "cross_entropy_backward": ["default"], "lse_combine": ["default"],
    "gemm": ["default", "out"],
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_schema_registered(name):
    packet = getattr(torch.ops.tachyon, name)
    assert sorted(packet.overloads()) == sorted(OPS[name])
    for overload in OPS[name]:
        schema = getattr(packet, overload)._schema
        assert schema.name == f"tachyon::{name}"
    # Every operator has a CUDA kernel; differentiable ones an Autograd kernel in C++.
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"tachyon::{name}", "CUDA")


@pytest.mark.parametrize("name", ["add", "mul", "relu", "silu", "gelu", "swiglu", "rms_norm", "layer_norm",
                                  "softmax", "cross_entropy", "gemm"])
def test_autograd_kernel_registered(name):
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"tachyon::{name}", "Autograd")


def _rand(mode, *shape, dtype=torch.bfloat16):
    with mode:
        return torch.empty(*shape, dtype=dtype, device="cuda")


@pytest.fixture
def mode():
    return FakeTensorMode()


def test_fake_norms(mode):
    x = _rand(mode, 3, 5, 64)
    w = _rand(mode, 64, dtype=torch.float32)
    r = _rand(mode, 3, 5, 64, dtype=torch.float32)
    with mode:
        y, h, rstd = torch.ops.tachyon.rms_norm(x, w, r, 1e-6, 0.0)
        assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
        assert h.shape == x.shape and h.dtype == torch.float32
        assert rstd.shape == (3, 5) and rstd.dtype == torch.float32
        y2, h2, _ = torch.ops.tachyon.rms_norm(x, None, None)
        assert h2.numel() == 0 and y2.dtype == torch.bfloat16
        dx, dw = torch.ops.tachyon.rms_norm_backward(y, x, w, rstd, None, 0.0, True)
        assert dx.shape == x.shape and dw.shape == (64,) and dw.dtype == torch.float32
        y, mean, rstd = torch.ops.tachyon.layer_norm(x, w, w, 1e-5)
        assert y.shape == x.shape and mean.shape == (3, 5) and mean.dtype == torch.float32
        dx, dw, db = torch.ops.tachyon.layer_norm_backward(y, x, w, mean, rstd, True, True)
        assert dw.dtype == torch.float32 and db.shape == (64,)


def test_fake_softmax_ce_gemm(mode):
    x = _rand(mode, 4, 7, 1000)
    t = _rand(mode, 4, 7, dtype=torch.int64)
    a = _rand(mode, 2, 9, 128)
    b = _rand(mode, 256, 128)
    with mode:
        y = torch.ops.tachyon.softmax(x, True)
        assert y.shape == x.shape and y.dtype == x.dtype
        loss, lse, dl = torch.ops.tachyon.cross_entropy(x, t, 0, -100, 0.0, False, 1.0)
        assert loss.shape == (4, 7) and lse.shape == (4, 7) and dl.numel() == 0 and loss.dtype == torch.float32
        loss, lse, dl = torch.ops.tachyon.cross_entropy(x, t, 2, -100, 0.1, True, 1.0)
        assert loss.shape == () and dl.shape == x.shape and dl.dtype == x.dtype
        d = torch.ops.tachyon.gemm(a, b, None, None, 1.0, 0.0, 2, False, torch.float32)
        assert d.shape == (2, 9, 256) and d.dtype == torch.float32
        d = torch.ops.tachyon.gemm(a, b.t(), None, None, 1.0, 0.0, 0, True, None)
        assert d.shape == (2, 9, 256) and d.dtype == torch.bfloat16
        g, u = torch.ops.tachyon.swiglu_backward(y, x, x)
        assert g.shape == x.shape and u.shape == x.shape


@pytest.mark.parametrize("fn", ["rms_norm", "layer_norm", "softmax", "cross_entropy", "swiglu", "linear"])
def test_meta_autograd(fn):
    # The differentiable path on meta tensors (the fake implementations serve as meta kernels):
    # the C++ autograd formulas run, and shapes and dtypes flow through forward and backward.
    x = torch.empty(6, 32, device="meta", dtype=torch.bfloat16, requires_grad=True)
    w = torch.empty(32, device="meta", requires_grad=True)
    if fn == "rms_norm":
        y = tachyon.rms_norm(x, w)
    elif fn == "layer_norm":
        y = tachyon.layer_norm(x, w, w)
    elif fn == "softmax":
        y = tachyon.log_softmax(x)
    elif fn == "cross_entropy":
        y = tachyon.cross_entropy(x, torch.empty(6, device="meta", dtype=torch.int64))
    elif fn == "swiglu":
        y = tachyon.swiglu(x, x)
    else:
        y = tachyon.linear(x, torch.empty(16, 32, device="meta", dtype=torch.bfloat16, requires_grad=True))
    y.sum().backward()
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype
    if fn in ("rms_norm", "layer_norm"):
        assert w.grad.shape == w.shape and w.grad.dtype == w.dtype


OPCHECK_CASES = [
    ("rms_norm", lambda m: (_rand(m, 4, 64), _rand(m, 64, dtype=torch.float32), None, 1e-6, 0.0)),
    ("layer_norm", lambda m: (_rand(m, 4, 64), _rand(m, 64), _rand(m, 64), 1e-5)),
    ("softmax", lambda m: (_rand(m, 4, 64), False)),
    ("silu", lambda m: (_rand(m, 4, 64),)),
    ("swiglu", lambda m: (_rand(m, 4, 64), _rand(m, 4, 64))),
    ("cross_entropy", lambda m: (_rand(m, 4, 64), _rand(m, 4, dtype=torch.int64), 2, -100, 0.0, False, 1.0)),
    ("gemm", lambda m: (_rand(m, 4, 64), _rand(m, 32, 64), None, None, 1.0, 0.0, 0, False, None)),
]


@pytest.mark.parametrize("name,make", OPCHECK_CASES, ids=[c[0] for c in OPCHECK_CASES])
def test_opcheck_schema_and_fake_on_fake_inputs(name, make):
    mode = FakeTensorMode()
    args = make(mode)
    op = getattr(torch.ops.tachyon, name).default
    with mode:
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor"))


# ---- bad arguments: tachyon.Error naming the op and the argument, before anything runs --------
def test_error_is_runtime_error_subclass():
    assert issubclass(tachyon.Error, RuntimeError)


BAD = [
    ("cpu tensor", lambda: tachyon.rms_norm(torch.randn(4, 8)), "rms_norm_forward: x: is on cpu"),
    ("float64", lambda: tachyon.rms_norm(torch.randn(4, 8, dtype=torch.float64)), "rms_norm_forward: x: dtype Double"),
    ("rank 5", lambda: tachyon.silu(torch.randn(1, 1, 1, 1, 8)), "silu: x: rank 5"),
    ("cpu weight", lambda: tachyon.layer_norm(torch.randn(2, 8, dtype=torch.bfloat16), torch.randn(8)),
     "layer_norm_forward: x: is on cpu"),
    ("softmax cpu", lambda: tachyon.softmax(torch.randn(2, 8)), "softmax_forward: x: is on cpu"),
    ("ce logits dtype", lambda: tachyon.cross_entropy(torch.randn(2, 8, dtype=torch.float64), torch.zeros(2, dtype=torch.int64)),
     "cross_entropy_forward: logits: dtype Double"),
    ("gemm cpu", lambda: tachyon.linear(torch.randn(2, 8), torch.randn(4, 8)), "gemm: a: is on cpu"),
    ("swiglu cpu", lambda: tachyon.swiglu(torch.randn(2, 8), torch.randn(2, 8)), "swiglu: gate: is on cpu"),
    ("autograd path", lambda: tachyon.rms_norm(torch.randn(4, 8, requires_grad=True)), "rms_norm_forward: x: is on cpu"),
    ("raw op", lambda: torch.ops.tachyon.lse_combine(torch.randn(2, 8)), "lse_combine: partial: is on cpu"),
]


@pytest.mark.parametrize("what,call,message", BAD, ids=[b[0] for b in BAD])
def test_bad_arguments(what, call, message):
    expected = RuntimeError if what == "raw op" else tachyon.Error
    with pytest.raises(expected) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)


def test_bad_python_arguments():
    with pytest.raises(ValueError, match="reduction"):
        tachyon.cross_entropy(torch.randn(2, 8), torch.zeros(2, dtype=torch.int64), reduction="avg")
    with pytest.raises(ValueError, match="activation"):
        tachyon.linear(torch.randn(2, 8), torch.randn(4, 8), activation="tanh")
