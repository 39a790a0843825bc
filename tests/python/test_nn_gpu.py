"""tachyon.nn modules against their torch counterparts on the GPU: forward and backward, float32
and bfloat16, with a float64 torch computation as the accuracy reference."""
import copy

import pytest
import torch

from conftest import gpu  # noqa: E402

pytestmark = gpu

import tachyon  # noqa: F401

from tachyon import nn as tnn  # noqa: E402

DEV = "cuda"
# Norm-relative error bounds ||got - ref|| / ||ref||, and elementwise (rtol, atol), per dtype.
REL = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 5e-3}
TOL = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-2, 2e-2), torch.float16: (5e-3, 5e-3)}


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    got, ref = got.double(), ref.double()
    return ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def check(got, ref, dtype, what, same_dtype=None):
    """got ~ ref (float64) within dtype tolerance; and no worse than torch's own result in dtype."""
    assert got.dtype == (dtype if same_dtype is None else same_dtype), what
    assert got.shape == ref.shape, what
    err = rel_err(got, ref)
    assert err < REL[dtype], f"{what}: relative error {err:.3e} >= {REL[dtype]:.1e}"
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(got.double(), ref, rtol=rtol, atol=atol * ref.abs().max().item(), msg=what)


def run(module, *inputs, dy=None, need_grad=(0,)):
    """Forward, then backward of <out, dy>; returns out and the grads of inputs[need_grad] and the params."""
    inputs = [t.detach().clone().requires_grad_(i in need_grad) for i, t in enumerate(inputs)]
    module.zero_grad(set_to_none=True)
    out = module(*inputs)
    if dy is None:
        dy = torch.ones_like(out)
    out.backward(dy.to(out.dtype))
    grads = [inputs[i].grad for i in need_grad]
    pgrads = {n: p.grad for n, p in module.named_parameters()}
    return out, grads, pgrads


def as64(module):
    return copy.deepcopy(module).double()


SHAPES = [(4, 33, 256), (7, 1000)]


# ---------------------------------------------------------------------------------------------
# RMSNorm

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("affine,weight_dtype", [(True, "same"), (True, torch.float32), (False, "same")])
@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm(dtype, weight_dtype, eps, affine, shape):
    torch.manual_seed(0)
    n = shape[-1]
    wdt = dtype if weight_dtype == "same" else weight_dtype
    ours = tnn.RMSNorm(n, eps=eps, elementwise_affine=affine, device=DEV, dtype=wdt)
    if affine:
        with torch.no_grad():
            ours.weight.normal_(1.0, 0.5)
    theirs = torch.nn.RMSNorm(n, eps=eps, elementwise_affine=affine, device=DEV, dtype=wdt)
    theirs.load_state_dict(ours.state_dict())
    ref = torch.nn.RMSNorm(n, eps=eps if eps is not None else torch.finfo(torch.float32).eps,
                           elementwise_affine=affine, device=DEV, dtype=torch.float64)
    ref.load_state_dict(ours.state_dict())

    x = torch.randn(shape, device=DEV).mul_(3).to(dtype)
    dy = torch.randn(shape, device=DEV).to(dtype)
    y, (dx,), pg = run(ours, x, dy=dy)
    y_t, (dx_t,), pg_t = run(theirs, x, dy=dy)
    y_r, (dx_r,), pg_r = run(ref, x.double(), dy=dy.double())

    check(y, y_r, dtype, "y")
    check(dx, dx_r, dtype, "dx")
    check(y, y_t.double(), dtype, "y vs torch")
    if affine:
        assert pg["weight"].dtype == wdt
        check(pg["weight"], pg_r["weight"], dtype, "dweight", same_dtype=wdt)
        assert rel_err(pg["weight"], pg_t["weight"]) < 2 * REL[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rmsnorm_weight_offset_gemma(dtype):
    torch.manual_seed(1)
    n = 512
    ours = tnn.RMSNorm(n, eps=1e-6, weight_offset=1.0, device=DEV, dtype=dtype)
    with torch.no_grad():
        ours.weight.normal_(0.0, 0.3)
    w64 = ours.weight.detach().double().requires_grad_(True)
    x = torch.randn(3, 17, n, device=DEV).to(dtype)
    dy = torch.randn(3, 17, n, device=DEV).to(dtype)
    y, (dx,), pg = run(ours, x, dy=dy)

    x64 = x.double().requires_grad_(True)
    y64 = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + w64)
    y64.backward(dy.double())
    check(y, y64.detach(), dtype, "y")
    check(dx, x64.grad, dtype, "dx")
    check(pg["weight"], w64.grad, dtype, "dweight")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rmsnorm_fused_residual(dtype):
    torch.manual_seed(2)
    n = 384
    ours = tnn.RMSNorm(n, eps=1e-5, device=DEV, dtype=dtype)
    x = torch.randn(8, n, device=DEV).to(dtype)
    r = torch.randn(8, n, device=DEV).to(dtype)
    y, h = ours(x, r)
    h_ref = x.double() + r.double()
    y_ref = torch.nn.functional.rms_norm(h_ref, (n,), ours.weight.double(), 1e-5)
    check(h, h_ref, dtype, "h")
    check(y, y_ref, dtype, "y")


# ---------------------------------------------------------------------------------------------
# LayerNorm

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("affine,bias,weight_dtype", [(True, True, "same"), (True, True, torch.float32),
                                                      (True, False, "same"), (False, False, "same")])
@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm(dtype, weight_dtype, affine, bias, shape):
    torch.manual_seed(0)
    n = shape[-1]
    wdt = dtype if weight_dtype == "same" else weight_dtype
    ours = tnn.LayerNorm(n, eps=1e-5, elementwise_affine=affine, bias=bias, device=DEV, dtype=wdt)
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_(0.5, 0.5)
    theirs = torch.nn.LayerNorm(n, eps=1e-5, elementwise_affine=affine, bias=bias, device=DEV, dtype=wdt)
    theirs.load_state_dict(ours.state_dict())
    ref = as64(theirs)

    x = (torch.randn(shape, device=DEV) * 2 + 0.7).to(dtype)
    dy = torch.randn(shape, device=DEV).to(dtype)
    y, (dx,), pg = run(ours, x, dy=dy)
    y_r, (dx_r,), pg_r = run(ref, x.double(), dy=dy.double())
    if wdt == dtype:
        y_t, _, pg_t = run(theirs, x, dy=dy)

    check(y, y_r, dtype, "y")
    check(dx, dx_r, dtype, "dx")
    for name in pg_r:
        assert pg[name].dtype == wdt
        check(pg[name], pg_r[name], dtype, f"d{name}", same_dtype=wdt)
    if wdt == dtype:  # torch's CUDA layer_norm wants the weight in x's dtype
        check(y, y_t.double(), dtype, "y vs torch")
        for name in pg_r:
            assert rel_err(pg[name], pg_t[name]) < 2 * REL[dtype]


# ---------------------------------------------------------------------------------------------
# CrossEntropyLoss

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("layout", ["NC", "NCd", "C"])
def test_cross_entropy(dtype, reduction, label_smoothing, layout):
    torch.manual_seed(0)
    C = 1000
    if layout == "NC":
        logits = torch.randn(64, C, device=DEV) * 3
        target = torch.randint(0, C, (64,), device=DEV)
        target[::7] = 5  # ignore_index below
    elif layout == "NCd":
        logits = torch.randn(4, C, 9, device=DEV) * 3
        target = torch.randint(0, C, (4, 9), device=DEV)
        target[:, ::4] = 5
    else:
        logits = torch.randn(C, device=DEV) * 3
        target = torch.tensor(17, device=DEV)
    logits = logits.to(dtype)
    kw = dict(ignore_index=5, reduction=reduction, label_smoothing=label_smoothing)
    ours, theirs = tnn.CrossEntropyLoss(**kw), torch.nn.CrossEntropyLoss(**kw)

    dl = torch.randn(target.shape, device=DEV) if reduction == "none" else torch.tensor(1.7, device=DEV)
    loss, (g,), _ = run(ours, logits, target, dy=dl)
    loss_t, (g_t,), _ = run(theirs, logits, target, dy=dl)
    loss_r, (g_r,), _ = run(theirs, logits.double(), target, dy=dl.double())

    assert loss.dtype == torch.float32  # Tachyon's loss is float32 whatever the logits' dtype
    assert loss.shape == loss_t.shape
    # The loss is computed in float32 from the (exact) logits: float32 accuracy in every case.
    check(loss, loss_r, torch.float32, "loss")
    check(g, g_r, dtype, "dlogits")
    assert g.dtype == dtype
    if dtype == torch.float32:
        check(g, g_t.double(), dtype, "dlogits vs torch")


def test_cross_entropy_all_ignored_mean_is_nan():
    logits = torch.randn(4, 10, device=DEV)
    target = torch.full((4,), -100, device=DEV)
    assert torch.isnan(tnn.CrossEntropyLoss()(logits, target))
    assert torch.isnan(torch.nn.CrossEntropyLoss()(logits, target))


def test_cross_entropy_rejects_probability_targets():
    with pytest.raises(NotImplementedError):
        tnn.CrossEntropyLoss()(torch.randn(4, 10, device=DEV), torch.rand(4, 10, device=DEV))


# ---------------------------------------------------------------------------------------------
# Linear, SwiGLU (Tachyon's GEMM: bfloat16 / float16)

def llama_mlp(x, gate_w, up_w, down_w, gate_b=None, up_b=None, down_b=None):
    """Hugging Face LlamaMLP written out: down(act(gate(x)) * up(x)), act = silu."""
    lin = torch.nn.functional.linear
    return lin(torch.nn.functional.silu(lin(x, gate_w, gate_b)) * lin(x, up_w, up_b), down_w, down_b)


def _linear64(module):
    ref = torch.nn.Linear(module.in_features, module.out_features, bias=module.bias is not None,
                          device=DEV, dtype=torch.float64)
    ref.load_state_dict({k: v.double() for k, v in module.state_dict().items()})
    return ref


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [False, True])
def test_linear(dtype, bias):
    torch.manual_seed(0)
    ours = tnn.Linear(256, 384, bias=bias, device=DEV, dtype=dtype)
    theirs = torch.nn.Linear(256, 384, bias=bias, device=DEV, dtype=dtype)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(5, 31, 256, device=DEV).to(dtype)
    dy = torch.randn(5, 31, 384, device=DEV).to(dtype)
    y, (dx,), pg = run(ours, x, dy=dy)
    y_t, _, _ = run(theirs, x, dy=dy)
    y_r, (dx_r,), pg_r = run(_linear64(ours), x.double(), dy=dy.double())
    check(y, y_r, dtype, "y")
    check(y, y_t.double(), dtype, "y vs torch")
    check(dx, dx_r, dtype, "dx")
    for name in pg_r:
        check(pg[name], pg_r[name], dtype, f"d{name}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("out_features", [None, 192])
def test_swiglu_matches_llama_mlp(dtype, bias, out_features):
    torch.manual_seed(0)
    d, hdim = 256, 704
    ours = tnn.SwiGLU(d, hdim, out_features, bias=bias, device=DEV, dtype=dtype)
    params = [ours.gate_proj.weight, ours.up_proj.weight, ours.down_proj.weight]
    if bias:
        params += [ours.gate_proj.bias, ours.up_proj.bias, ours.down_proj.bias]
    names = ["gate_proj.weight", "up_proj.weight", "down_proj.weight", "gate_proj.bias", "up_proj.bias",
             "down_proj.bias"][: len(params)]
    x = torch.randn(3, 41, d, device=DEV).to(dtype)
    dy = torch.randn(3, 41, out_features or d, device=DEV).to(dtype)

    y, (dx,), pg = run(ours, x, dy=dy)

    def hand(xin, ps):
        return llama_mlp(xin, *ps)

    # The same MLP by hand in torch, in dtype and in float64.
    leaves = [p.detach().clone().requires_grad_(True) for p in params]
    xt = x.clone().requires_grad_(True)
    y_t = hand(xt, leaves)
    y_t.backward(dy)
    leaves64 = [p.detach().double().requires_grad_(True) for p in params]
    x64 = x.double().requires_grad_(True)
    y_r = hand(x64, leaves64)
    y_r.backward(dy.double())

    check(y, y_r.detach(), dtype, "y")
    check(dx, x64.grad, dtype, "dx")
    assert rel_err(y, y_t) < REL[dtype]
    assert rel_err(dx, xt.grad) < REL[dtype]
    for name, l64, lt in zip(names, leaves64, leaves):
        assert pg[name].dtype == dtype
        err = rel_err(pg[name], l64.grad)
        assert err < REL[dtype], f"d{name}: {err:.3e}"
        assert rel_err(pg[name], lt.grad) < 2 * REL[dtype]
