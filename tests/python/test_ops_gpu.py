"""Every tachyon operator and its gradient against PyTorch in float64, on the GPU.

Inputs are fresh random values each run; shapes include M = 1, odd N, real hidden sizes and
vocabularies; layouts include strided rows and misaligned storage offsets; some rows carry
NaN / Inf. Tolerances are per dtype (one rounding of the output, plus fp32 accumulation).
"""
import math
import weakref

import pytest
import torch
import torch.nn.functional as F

import tachyon
from conftest import gpu

pytestmark = gpu

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# (rtol, atol as a fraction of the reference's largest magnitude)
TOL = {torch.float32: (2e-5, 2e-5), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float16: (2e-3, 2e-3)}
# Gradients of reductions (norm dx, dw) accumulate more roundings.
GTOL = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (3e-2, 3e-2), torch.float16: (5e-3, 5e-3)}

ROW_SHAPES = [(1, 4096), (7, 1000), (33, 4099), (16, 8192), (3, 65536)]
LAYOUTS = ["contiguous", "strided", "misaligned"]


# The smallest step of each dtype near zero: a result below it rounds to zero or one step.
TINY = {torch.float32: 2.0 ** -149, torch.bfloat16: 2.0 ** -133, torch.float16: 2.0 ** -24}


def close(actual, expected, dtype, tol=TOL):
    rtol, atol = tol[dtype]
    expected = expected.double()
    finite = expected[torch.isfinite(expected)]
    scale = finite.abs().max().item() if finite.numel() else 1.0
    torch.testing.assert_close(actual.double(), expected, rtol=rtol, atol=atol * scale + TINY[dtype],
                               equal_nan=True)


def make(shape, dtype, layout="contiguous", scale=1.0, requires_grad=False):
    """A (M, N) tensor in the given layout: contiguous, rows `stride > N` apart, or starting one
    element past an aligned address (rows misaligned for 16-byte vector access)."""
    m, n = shape
    if layout == "contiguous":
        t = torch.randn(m, n, device="cuda", dtype=dtype) * scale
    elif layout == "strided":
        t = (torch.randn(m, n + 24, device="cuda", dtype=dtype) * scale)[:, 5:5 + n]
    else:
        buf = torch.randn(m * n + 1, device="cuda", dtype=dtype) * scale
        t = buf[1:].view(m, n)
    return t.requires_grad_(requires_grad)


def grad_like(t):
    return torch.randn_like(t, memory_format=torch.contiguous_format)


# ---- RMSNorm --------------------------------------------------------------------------------
def rms_ref(x, w, eps, offset, residual=None):
    h = x.double() if residual is None else x.double() + residual.double()
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    if w is not None:
        y = y * (w.double() + offset)
    return y, h


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("wdtype", ["same", torch.float32, None])
def test_rms_norm_forward_backward(dtype, shape, layout, wdtype):
    x = make(shape, dtype, layout, requires_grad=True)
    w = None if wdtype is None else torch.randn(shape[1], device="cuda", dtype=dtype if wdtype == "same" else wdtype)
    if w is not None:
        w.requires_grad_(True)
    y = tachyon.rms_norm(x, w, 1e-6)
    assert y.dtype == dtype and y.shape == x.shape
    x64 = x.detach().double().requires_grad_(True)
    w64 = None if w is None else w.detach().double().requires_grad_(True)
    ref, _ = rms_ref(x64, w64, 1e-6, 0.0)
    close(y, ref, dtype)
    dy = grad_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    close(x.grad, x64.grad, dtype, GTOL)
    if w is not None:
        close(w.grad, w64.grad, w.dtype if w.dtype != torch.float32 else dtype, GTOL)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("rdtype", ["same", torch.float32])
@pytest.mark.parametrize("shape", [(1, 4096), (9, 3000), (5, 16384)])
def test_rms_norm_fused_residual_gemma(dtype, rdtype, shape):
    x = make(shape, dtype, requires_grad=True)
    r = make(shape, dtype if rdtype == "same" else rdtype, requires_grad=True)
    w = (0.1 * torch.randn(shape[1], device="cuda")).requires_grad_(True)
    y, h = tachyon.rms_norm(x, w, 1e-6, residual=r, weight_offset=1.0)
    assert h.dtype == r.dtype
    x64, r64, w64 = (t.detach().double().requires_grad_(True) for t in (x, r, w))
    ref, h_ref = rms_ref(x64, w64, 1e-6, 1.0, r64)
    close(y, ref, dtype)
    close(h, h_ref, r.dtype)
    dy, dh = grad_like(y), grad_like(h)
    torch.autograd.backward([y, h], [dy, dh])
    torch.autograd.backward([ref, h_ref], [dy.double(), dh.double()])
    close(x.grad, x64.grad, dtype, GTOL)
    close(r.grad, r64.grad, dtype, GTOL)
    close(w.grad, w64.grad, dtype, GTOL)


def test_rms_norm_nan_inf_rows_stay_in_their_row():
    x = torch.randn(6, 4096, device="cuda", dtype=torch.bfloat16)
    x[1, 7] = float("nan")
    x[3, 100] = float("inf")
    x[4] *= 3.0e4  # large magnitude, finite
    y = tachyon.rms_norm(x)
    assert torch.isnan(y[1]).all() and not torch.isnan(y[[0, 2, 4, 5]]).any()
    close(y[4], rms_ref(x[4:5], None, 1e-6, 0.0)[0][0], torch.bfloat16)


@pytest.mark.parametrize("fn", ["rms_norm", "layer_norm", "softmax", "silu"])
def test_any_input_strides(fn):
    # Transposed heads (q/k norms of (B, H, S, D) views) and expanded gradients: inputs whose
    # rows do not collapse are copied to rows first, as torch ops accept any strides.
    base = torch.randn(2, 24, 4, 16, device="cuda", dtype=torch.bfloat16)
    x = base.transpose(1, 2).requires_grad_(True)  # (2, 4, 24, 16), rows not collapsible
    ours = {"rms_norm": tachyon.rms_norm, "layer_norm": tachyon.layer_norm, "softmax": tachyon.softmax,
            "silu": tachyon.silu}[fn](x)
    x64 = x.detach().double().requires_grad_(True)
    ref = {"rms_norm": lambda t: rms_ref(t, None, 1e-6, 0.0)[0], "layer_norm": lambda t: F.layer_norm(t, (16,)),
           "softmax": lambda t: F.softmax(t, -1), "silu": F.silu}[fn](x64)
    close(ours, ref, torch.bfloat16)
    # An expanded incoming gradient (stride 0 over the leading dimensions), not constant along
    # the rows (a row-constant one has a zero gradient through norms and softmax).
    c = torch.randn(16, device="cuda", dtype=torch.bfloat16)
    ours.sum(dim=(0, 1, 2)).backward(c)
    ref.sum(dim=(0, 1, 2)).backward(c.double())
    close(x.grad, x64.grad, torch.bfloat16, GTOL)


def test_eager_calls_hand_back_owned_outputs():
    # The eager fast entries build their results by hand: an extra reference on an output keeps
    # its memory alive for the life of the process (every call of a training step).
    x, r = make((4, 256), torch.bfloat16), make((4, 256), torch.bfloat16)
    w = torch.randn(256, device="cuda")
    t = torch.randint(0, 256, (4,), device="cuda")
    calls = {"rms_norm": lambda: [tachyon.rms_norm(x, w)],
             "rms_norm with residual": lambda: tachyon.rms_norm(x, w, residual=r),
             "layer_norm": lambda: [tachyon.layer_norm(x, w, w)], "softmax": lambda: [tachyon.softmax(x)],
             "cross_entropy": lambda: [tachyon.cross_entropy(x, t)], "silu": lambda: [tachyon.silu(x)],
             "add": lambda: [tachyon.add(x, r)], "linear": lambda: [tachyon.linear(x, r)]}
    for name, call in calls.items():
        refs = [weakref.ref(o) for o in call()]
        assert all(ref() is None for ref in refs), name


def test_rms_norm_dw_deterministic():
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(4096, device="cuda", requires_grad=True)
    dy = torch.randn_like(x)
    grads = []
    for _ in range(3):
        w.grad = None
        tachyon.rms_norm(x, w).backward(dy)
        grads.append(w.grad.clone())
    assert torch.equal(grads[0], grads[1]) and torch.equal(grads[1], grads[2])


# ---- LayerNorm ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("affine", ["same", "fp32", "none"])
def test_layer_norm_forward_backward(dtype, shape, layout, affine):
    x = make(shape, dtype, layout, scale=2.0, requires_grad=True)
    w = b = None
    if affine != "none":
        pdt = dtype if affine == "same" else torch.float32
        w = torch.randn(shape[1], device="cuda", dtype=pdt).requires_grad_(True)
        b = torch.randn(shape[1], device="cuda", dtype=pdt).requires_grad_(True)
    y = tachyon.layer_norm(x, w, b, 1e-5)
    x64 = x.detach().double().requires_grad_(True)
    w64 = None if w is None else w.detach().double().requires_grad_(True)
    b64 = None if b is None else b.detach().double().requires_grad_(True)
    ref = F.layer_norm(x64, (shape[1],), w64, b64, 1e-5)
    close(y, ref, dtype)
    dy = grad_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    close(x.grad, x64.grad, dtype, GTOL)
    if w is not None:
        close(w.grad, w64.grad, dtype, GTOL)
        close(b.grad, b64.grad, dtype, GTOL)


def test_layer_norm_large_mean():
    # Rows whose mean is 1e4 times their spread: an fp32 mean carries |mean| * 2^-24 of rounding,
    # so no fp32 kernel beats ~1e4 * 6e-8 absolute on the normalised output (spread 1). Tachyon
    # must stay within a few of those steps.
    x = torch.randn(8, 4096, device="cuda") + 1.0e4
    ref = F.layer_norm(x.double(), (4096,))
    ours = (tachyon.layer_norm(x).double() - ref).abs().max().item()
    assert ours <= 4 * 1.0e4 * 2.0 ** -24, ours


# ---- softmax --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES + [(4, 128256)])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_backward(dtype, shape, layout, log):
    x = make(shape, dtype, layout, scale=3.0, requires_grad=True)
    y = tachyon.log_softmax(x) if log else tachyon.softmax(x)
    x64 = x.detach().double().requires_grad_(True)
    ref = (F.log_softmax if log else F.softmax)(x64, -1)
    close(y, ref, dtype)
    dy = grad_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    close(x.grad, x64.grad, dtype, GTOL)


def test_softmax_other_dim_and_masks():
    x = torch.randn(5, 300, 7, device="cuda")
    close(tachyon.softmax(x, dim=1), F.softmax(x.double(), 1), torch.float32)
    m = torch.randn(4, 1000, device="cuda", dtype=torch.bfloat16)
    m[0, :500] = float("-inf")
    m[1, 3] = float("nan")
    y = tachyon.softmax(m)
    assert (y[0, :500] == 0).all() and torch.isnan(y[1]).all()
    close(y[[0, 2, 3]], F.softmax(m[[0, 2, 3]].double(), -1), torch.bfloat16)


# ---- cross-entropy --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 32000), (37, 50257), (8, 128256), (64, 1000), (5, 151936)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy(dtype, shape, reduction, smoothing):
    m, n = shape
    logits = make(shape, dtype, "misaligned" if m % 2 else "contiguous", scale=4.0, requires_grad=True)
    target = torch.randint(0, n, (m,), device="cuda")
    if m > 3:
        target[2] = -100
    loss = tachyon.cross_entropy(logits, target, reduction=reduction, label_smoothing=smoothing)
    assert loss.dtype == torch.float32
    l64 = logits.detach().double().requires_grad_(True)
    ref = F.cross_entropy(l64, target, reduction=reduction, ignore_index=-100, label_smoothing=smoothing)
    close(loss, ref, torch.float32, {torch.float32: (1e-5, 1e-5)})
    g = torch.rand_like(loss) + 0.5
    loss.backward(g)
    ref.backward(g.double())
    close(logits.grad, l64.grad, dtype, GTOL)


def test_cross_entropy_3d_and_int32_targets():
    logits = torch.randn(2, 9, 5000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, 5000, (2, 9), device="cuda", dtype=torch.int32)
    loss = tachyon.cross_entropy(logits, target)
    ref = F.cross_entropy(logits.detach().double().view(-1, 5000), target.view(-1).long())
    close(loss, ref, torch.float32, {torch.float32: (1e-5, 1e-5)})
    loss.backward()
    assert logits.grad.shape == logits.shape


# ---- elementwise ----------------------------------------------------------------------------
EW = {
    "silu": (tachyon.silu, F.silu),
    "gelu": (tachyon.gelu, lambda x: F.gelu(x, approximate="tanh")),
    "relu": (tachyon.relu, F.relu),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(EW))
@pytest.mark.parametrize("shape", [(1, 1), (3, 1001), (64, 14336)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unary(dtype, name, shape, layout):
    ours, ref_fn = EW[name]
    x = make(shape, dtype, layout, scale=3.0, requires_grad=True)
    y = ours(x)
    x64 = x.detach().double().requires_grad_(True)
    ref = ref_fn(x64)
    close(y, ref, dtype)
    dy = grad_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    close(x.grad, x64.grad, dtype, GTOL)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 7), (5, 14336), (129, 3000)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_swiglu_add_mul(dtype, shape, layout):
    g = make(shape, dtype, layout, scale=3.0, requires_grad=True)
    u = make(shape, dtype, layout, requires_grad=True)
    g64, u64 = (t.detach().double().requires_grad_(True) for t in (g, u))
    for ours, ref_fn in ((tachyon.swiglu, lambda a, b: F.silu(a) * b), (tachyon.add, torch.add), (tachyon.mul, torch.mul)):
        g.grad = u.grad = g64.grad = u64.grad = None
        y, ref = ours(g, u), ref_fn(g64, u64)
        close(y, ref, dtype)
        dy = grad_like(y)
        y.backward(dy)
        ref.backward(dy.double())
        close(g.grad, g64.grad, dtype, GTOL)
        close(u.grad, u64.grad, dtype, GTOL)


# ---- linear (GEMM) --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mnk", [(1, 256, 512), (64, 4096, 4096), (300, 1000, 136), (37, 129, 67)])
@pytest.mark.parametrize("activation", [None, "silu", "gelu_tanh", "relu"])
@pytest.mark.parametrize("bias", [False, True])
def test_linear(dtype, mnk, activation, bias):
    m, n, k = mnk
    x = (torch.randn(m, k, device="cuda", dtype=dtype) / math.sqrt(k)).requires_grad_(True)
    w = torch.randn(n, k, device="cuda", dtype=dtype).requires_grad_(True)
    b = torch.randn(n, device="cuda", dtype=dtype).requires_grad_(True) if bias else None
    y = tachyon.linear(x, w, b, activation=activation)
    x64, w64 = x.detach().double().requires_grad_(True), w.detach().double().requires_grad_(True)
    b64 = b.detach().double().requires_grad_(True) if bias else None
    z = F.linear(x64, w64, b64)
    # relu's reference takes the kernel's own mask: where z lies within the GEMM's rounding of
    # 0 the two sides may disagree on the sign, a difference of |z| in y (within tolerance) but
    # of a whole dy * w term in each dx sum (several such columns a row at n = 4096).
    relu = z * (y.detach() > 0)
    ref = {None: z, "silu": F.silu(z), "relu": relu, "gelu_tanh": F.gelu(z, approximate="tanh")}[activation]
    close(y, ref, dtype, GTOL)
    with torch.no_grad():  # the fused-epilogue path
        close(tachyon.linear(x, w, b, activation=activation), ref, dtype, GTOL)
    dy = grad_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    close(x.grad, x64.grad, dtype, GTOL)
    close(w.grad, w64.grad, dtype, GTOL)
    if bias:
        close(b.grad, b64.grad, dtype, GTOL)


# ---- errors on the GPU: named, and nothing written ------------------------------------------
def test_errors_name_op_and_argument_and_write_nothing():
    x = torch.randn(4, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(tachyon.Error, match=r"^rms_norm_forward: weight:"):
        tachyon.rms_norm(x, torch.randn(63, device="cuda"))
    with pytest.raises(tachyon.Error, match=r"^swiglu: up:"):
        tachyon.swiglu(x, torch.randn(4, 65, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match=r"^softmax_forward: y:"):  # an output must take its rows as they are
        torch.ops.tachyon.softmax.out(x, False, out=torch.empty(64, 4, device="cuda", dtype=torch.bfloat16).t())
    out = torch.full((4, 64), 7.0, device="cuda")  # wrong dtype for the out= form
    with pytest.raises(RuntimeError, match=r"^silu: out:"):
        torch.ops.tachyon.silu.out(x, out=out)
    torch.cuda.synchronize()
    assert (out == 7.0).all()


# ---- opcheck: schema, fake tensors, autograd registration, AOT dispatch ----------------------
def _opcheck_cases():
    bf = dict(device="cuda", dtype=torch.bfloat16)
    x = lambda *s, rg=True: torch.randn(*s, **bf).requires_grad_(rg)  # noqa: E731
    w32 = lambda n: torch.randn(n, device="cuda", requires_grad=True)  # noqa: E731
    t = torch.randint(0, 1000, (6,), device="cuda")
    rstd = torch.rand(6, device="cuda") + 0.5
    mean = torch.randn(6, device="cuda")
    return [
        ("rms_norm", (x(6, 1000), w32(1000), None, 1e-6, 0.0)),
        ("rms_norm_fused", (x(6, 1000), w32(1000), x(6, 1000), 1e-6, 1.0)),
        ("rms_norm_backward", (x(6, 1000, rg=False), x(6, 1000, rg=False), w32(1000).detach(), rstd, None, 0.0, True)),
        ("layer_norm", (x(6, 1000), w32(1000), w32(1000), 1e-5)),
        ("layer_norm_backward", (x(6, 1000, rg=False), x(6, 1000, rg=False), w32(1000).detach(), mean, rstd, True, True)),
        ("softmax", (x(6, 1000), True)),
        ("softmax_backward", (x(6, 1000, rg=False), x(6, 1000, rg=False), False)),
        ("cross_entropy", (x(6, 1000), t, 2, -100, 0.1, False, 1.0)),
        ("cross_entropy_none", (x(6, 1000), t, 0, -100, 0.0, False, 1.0)),
        ("cross_entropy_backward", (x(6, 1000, rg=False), t, rstd, None, 2, -100, 0.0)),
        ("silu", (x(6, 1000),)), ("gelu", (x(6, 1000),)), ("relu", (x(6, 1000),)),
        ("swiglu", (x(6, 1000), x(6, 1000))), ("add", (x(6, 1000), x(6, 1000))), ("mul", (x(6, 1000), x(6, 1000))),
        ("silu_backward", (x(6, 1000, rg=False), x(6, 1000, rg=False))),
        ("swiglu_backward", (x(6, 1000, rg=False), x(6, 1000, rg=False), x(6, 1000, rg=False))),
        ("gemm", (x(64, 256), x(128, 256), x(128), None, 1.0, 0.0, 2, False, None)),
        ("lse_combine", (torch.randn(4, 6, device="cuda"),)),
    ]


@pytest.mark.parametrize("case", range(20))
def test_opcheck(case):
    cases = _opcheck_cases()
    name, args = cases[case]
    op = getattr(torch.ops.tachyon, name.replace("_fused", "").replace("_none", "")).default
    differentiable = any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
    utils = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    if not differentiable:
        utils = tuple(u for u in utils if u != "test_autograd_registration")
    torch.library.opcheck(op, args, test_utils=utils)


# ---- torch.compile, CUDA graphs --------------------------------------------------------------
class Block(torch.nn.Module):
    """norm -> linear -> swiglu -> linear -> norm -> loss, all on tachyon."""

    def __init__(self, d=256, h=512, vocab=1000):
        super().__init__()
        self.w0 = torch.nn.Parameter(torch.ones(d))
        self.up = torch.nn.Parameter(torch.randn(2 * h, d) / d ** 0.5)
        self.down = torch.nn.Parameter(torch.randn(d, h) / h ** 0.5)
        self.w1 = torch.nn.Parameter(torch.ones(d))
        self.head = torch.nn.Parameter(torch.randn(vocab, d) / d ** 0.5)

    def forward(self, x, target):
        h = tachyon.rms_norm(x, self.w0)
        gu = tachyon.linear(h, self.up)
        g, u = gu.chunk(2, dim=-1)
        a = tachyon.swiglu(g.contiguous(), u.contiguous())
        h2 = tachyon.linear(a, self.down)
        y, res = tachyon.rms_norm(h2, self.w1, residual=x)
        logits = tachyon.linear(y, self.head)
        return tachyon.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1)) + res.float().mean() * 0


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_fullgraph_matches_eager(dynamic):
    torch._dynamo.reset()
    model = Block().cuda().to(torch.bfloat16)
    compiled = torch.compile(model, fullgraph=True, dynamic=dynamic)
    for seq in (64, 96):
        x = torch.randn(2, seq, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        target = torch.randint(0, 1000, (2, seq), device="cuda")
        loss_e = model(x, target)
        grads_e = torch.autograd.grad(loss_e, [x, *model.parameters()])
        loss_c = compiled(x, target)
        grads_c = torch.autograd.grad(loss_c, [x, *model.parameters()])
        close(loss_c, loss_e, torch.float32, {torch.float32: (1e-3, 1e-3)})
        for gc, ge in zip(grads_c, grads_e):
            close(gc, ge, torch.bfloat16, GTOL)


def test_compile_sees_one_node_per_op():
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("eager")

    def f(x, w):
        return tachyon.softmax(tachyon.rms_norm(x, w))

    torch.compile(f, backend=counter, fullgraph=True)(torch.randn(4, 64, device="cuda"), torch.randn(64, device="cuda"))
    assert counter.frame_count == 1
    graph = counter.graphs[0]
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert any("tachyon.rms_norm" in t for t in targets) and any("tachyon.softmax" in t for t in targets)


def test_export():
    class M(torch.nn.Module):
        def forward(self, x, w):
            return tachyon.rms_norm(x, w)

    x, w = torch.randn(8, 128, device="cuda", dtype=torch.bfloat16), torch.randn(128, device="cuda")
    ep = torch.export.export(M(), (x, w))
    close(ep.module()(x, w), M()(x, w).double(), torch.bfloat16)


def test_cuda_graph_capture_and_replay():
    x = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda")
    logits = torch.randn(16, 32000, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, 32000, (16,), device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside capture
        for _ in range(2):
            tachyon.rms_norm(x, w)
            tachyon.cross_entropy(logits, target)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = tachyon.rms_norm(x, w)
        loss = tachyon.cross_entropy(logits, target)
        sm = tachyon.softmax(tachyon.silu(y))
    x.copy_(torch.randn_like(x))
    logits.copy_(torch.randn_like(logits))
    g.replay()
    torch.cuda.synchronize()
    close(y, rms_ref(x, w, 1e-6, 0.0)[0], torch.bfloat16)
    close(loss, F.cross_entropy(logits.double(), target), torch.float32, {torch.float32: (1e-5, 1e-5)})
    close(sm, F.softmax(F.silu(y.double()), -1), torch.bfloat16)
