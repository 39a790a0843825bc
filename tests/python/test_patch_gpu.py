"""tachyon.patch on small Hugging Face models (built from configs, eager attention) on the GPU:
the patched copy's loss and every parameter gradient against the unpatched model's."""
import copy

import pytest
import torch

from conftest import gpu  # noqa: E402

pytestmark = gpu
transformers = pytest.importorskip("transformers")

import tachyon  # noqa: F401

from tachyon.patch import HFRMSNorm, patch, tachyon_causal_lm_loss  # noqa: E402

DEV = "cuda"
SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=256)
BATCH, SEQ = 2, 24


def _families():
    out = []
    for name, cfg, lm, extra in [
        ("llama", "LlamaConfig", "LlamaForCausalLM", {}),
        ("qwen2", "Qwen2Config", "Qwen2ForCausalLM", {}),
        ("qwen3", "Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),
        ("mistral", "MistralConfig", "MistralForCausalLM", {}),
        ("gemma", "GemmaConfig", "GemmaForCausalLM", {"head_dim": 16}),
        ("gemma2", "Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 16}),
        ("gemma3", "Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 16}),
    ]:
        if hasattr(transformers, cfg) and hasattr(transformers, lm):
            out.append(pytest.param(getattr(transformers, cfg), getattr(transformers, lm), extra, id=name))
    return out


@pytest.fixture(autouse=True)
def _exact_fp32_matmuls():
    # TF32 would round both models' matmul inputs to 10 bits and hide (or amplify) differences.
    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(prev)


def _model(cfg_cls, lm_cls, extra, dtype):
    torch.manual_seed(0)
    cfg = cfg_cls(**SMALL, **extra, attn_implementation="eager")
    model = lm_cls(cfg).to(DEV).eval()  # eval: no dropout; gradients still flow
    with torch.no_grad():  # norm weights away from their 1 (Llama) / 0 (Gemma) initial values
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    return model.to(dtype)


def _loss_and_grads(model, input_ids, labels):
    model.zero_grad(set_to_none=True)
    out = model(input_ids=input_ids, labels=labels)
    out.loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None for g in grads.values()), [n for n, g in grads.items() if g is None]
    return out.loss.detach(), out.logits.detach(), grads


def _rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def _inputs():
    g = torch.Generator(device="cpu").manual_seed(1)
    input_ids = torch.randint(0, SMALL["vocab_size"], (BATCH, SEQ), generator=g).to(DEV)
    labels = input_ids.clone()
    labels[:, :3] = -100  # some ignored positions
    return input_ids, labels


@pytest.mark.parametrize("loss", [False, True], ids=["norms", "norms+loss"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("cfg_cls,lm_cls,extra", _families())
def test_patched_model_matches(cfg_cls, lm_cls, extra, dtype, loss):
    base = _model(cfg_cls, lm_cls, extra, dtype)
    patched = patch(copy.deepcopy(base), loss=loss)
    rec = patched._tachyon_patched
    n_norms = sum(isinstance(m, HFRMSNorm) for m in patched.modules())
    assert n_norms > 0 and rec["rms_norm"] == n_norms and rec["skipped"] == {}
    assert (patched.loss_function is tachyon_causal_lm_loss) == loss
    assert rec["loss"] == ("ForCausalLMLoss" if loss else None)

    input_ids, labels = _inputs()
    loss_b, logits_b, g_b = _loss_and_grads(base, input_ids, labels)
    loss_p, logits_p, g_p = _loss_and_grads(patched, input_ids, labels)
    assert loss_p.dtype == loss_b.dtype == torch.float32
    assert logits_p.dtype == logits_b.dtype
    assert g_p.keys() == g_b.keys()

    if dtype == torch.float32:
        torch.testing.assert_close(loss_p, loss_b, rtol=1e-4, atol=0)
        assert _rel(logits_p, logits_b) < 1e-4
        bad = {n: e for n in g_b if (e := _rel(g_p[n], g_b[n])) >= 2e-4}
        assert not bad, f"gradients off by (relative norm): {bad}"
        return

    # bf16: Hugging Face's and Tachyon's models differ by bf16 rounding (Llama-style norms round
    # twice in Hugging Face, once in Tachyon). Both are compared with a float32 run of the same
    # (bf16-valued) weights: Tachyon's error may not be meaningfully larger than Hugging Face's.
    ref = copy.deepcopy(base).float()
    loss_r, logits_r, g_r = _loss_and_grads(ref, input_ids, labels)
    assert abs(loss_p.item() - loss_b.item()) <= 1e-2 * abs(loss_b.item())
    assert _rel(logits_p, logits_b) < 2e-2
    err_b = {n: _rel(g_b[n], g_r[n]) for n in g_r}
    err_p = {n: _rel(g_p[n], g_r[n]) for n in g_r}
    direct = {n: _rel(g_p[n], g_b[n]) for n in g_r}
    assert max(direct.values()) < 5e-2, f"bf16 gradients, Tachyon vs Hugging Face: {direct}"
    # Over all gradients together (per-tensor ratios of two bf16 noise samples are noisy).
    tot = lambda errs: (sum((errs[n] * g_r[n].double().norm()) ** 2 for n in g_r) ** 0.5  # noqa: E731
                        / sum(g_r[n].double().norm() ** 2 for n in g_r) ** 0.5).item()
    assert tot(err_p) <= 1.25 * tot(err_b) + 1e-3, (tot(err_p), tot(err_b))
    assert abs(loss_p.item() - loss_r.item()) <= 2 * abs(loss_b.item() - loss_r.item()) + 2e-3 * abs(loss_r.item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("num_items", [None, 37])
@pytest.mark.parametrize("given_shift", [False, True])
def test_causal_lm_loss_matches_transformers(dtype, num_items, given_shift):
    from transformers.loss.loss_utils import ForCausalLMLoss

    torch.manual_seed(0)
    V = 1000
    logits = (torch.randn(3, 17, V, device=DEV) * 2).to(dtype)
    labels = torch.randint(0, V, (3, 17), device=DEV)
    labels[0, :5] = -100
    kw = {}
    if num_items is not None:
        kw["num_items_in_batch"] = torch.tensor(num_items, device=DEV)
    if given_shift:
        kw["shift_labels"] = torch.roll(labels, -1, dims=1)
    a = logits.clone().requires_grad_(True)
    b = logits.clone().requires_grad_(True)
    la = tachyon_causal_lm_loss(a, labels, V, **kw)
    lb = ForCausalLMLoss(b, labels, V, **kw)
    la.backward()
    lb.backward()
    assert la.dtype == lb.dtype == torch.float32
    torch.testing.assert_close(la, lb, rtol=1e-5, atol=1e-6)
    assert a.grad.dtype == b.grad.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    assert _rel(a.grad, b.grad) < tol
