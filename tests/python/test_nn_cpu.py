"""tachyon.nn and tachyon.patch without a GPU: signatures, state_dict keys, reprs, and what patch()
swaps in small Hugging Face models built from configs (nothing is run: the kernels need CUDA)."""
import copy
import inspect

import pytest
import torch

import tachyon  # noqa: F401

from tachyon import nn as tnn  # noqa: E402
from tachyon.patch import HFRMSNorm, patch  # noqa: E402

try:
    import transformers
except ImportError:
    transformers = None
needs_transformers = pytest.mark.skipif(transformers is None, reason="transformers is not installed")

PAIRS = [
    (tnn.RMSNorm, torch.nn.RMSNorm),
    (tnn.LayerNorm, torch.nn.LayerNorm),
    (tnn.CrossEntropyLoss, torch.nn.CrossEntropyLoss),
    (tnn.Linear, torch.nn.Linear),
]


# ---------------------------------------------------------------------------------------------
# Modules

@pytest.mark.parametrize("ours,theirs", PAIRS, ids=lambda c: c.__name__ if isinstance(c, type) else "")
def test_signature_matches_torch(ours, theirs):
    p_ours = inspect.signature(ours).parameters
    p_theirs = inspect.signature(theirs).parameters
    # Same names, order, kinds and defaults for every torch parameter ...
    assert list(p_ours)[: len(p_theirs)] == list(p_theirs)
    for name, p in p_theirs.items():
        q = p_ours[name]
        assert q.kind == p.kind, name
        assert q.default == p.default, name
    # ... and extras only keyword-only with defaults (RMSNorm's weight_offset).
    extra = {n: q for n, q in p_ours.items() if n not in p_theirs}
    for n, q in extra.items():
        assert q.kind == inspect.Parameter.KEYWORD_ONLY and q.default is not inspect.Parameter.empty, n
    assert set(extra) == ({"weight_offset"} if ours is tnn.RMSNorm else set())


def test_subclasses_torch_modules():
    for ours, theirs in PAIRS:
        assert issubclass(ours, theirs)


NORM_CASES = [
    (tnn.RMSNorm, torch.nn.RMSNorm, (64,), {}),
    (tnn.RMSNorm, torch.nn.RMSNorm, 64, {"eps": 1e-6}),
    (tnn.RMSNorm, torch.nn.RMSNorm, [64], {"elementwise_affine": False}),
    (tnn.LayerNorm, torch.nn.LayerNorm, 64, {}),
    (tnn.LayerNorm, torch.nn.LayerNorm, (64,), {"bias": False}),
    (tnn.LayerNorm, torch.nn.LayerNorm, 64, {"elementwise_affine": False, "eps": 1e-6}),
    (tnn.Linear, torch.nn.Linear, 32, {"out_features": 48}),
    (tnn.Linear, torch.nn.Linear, 32, {"out_features": 48, "bias": False}),
]


@pytest.mark.parametrize("ours,theirs,shape,kw", NORM_CASES)
def test_state_dict_and_repr_match_torch(ours, theirs, shape, kw):
    torch.manual_seed(0)
    a = ours(shape, **kw)
    b = theirs(shape, **kw)
    assert list(a.state_dict()) == list(b.state_dict())
    for k, v in a.state_dict().items():
        assert v.shape == b.state_dict()[k].shape and v.dtype == b.state_dict()[k].dtype
        if ours is not tnn.Linear:  # same (deterministic) initial values
            assert torch.equal(v, b.state_dict()[k])
    # Loading a torch module's state works and copies the values.
    with torch.no_grad():
        for p in b.parameters():
            p.normal_()
    a.load_state_dict(b.state_dict())
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k])
    assert repr(a) == repr(b)
    # Back into torch too.
    b.load_state_dict(a.state_dict())


def test_norm_attributes_match_torch():
    a, b = tnn.RMSNorm(16, eps=1e-5), torch.nn.RMSNorm(16, eps=1e-5)
    assert (a.normalized_shape, a.eps, a.elementwise_affine) == (b.normalized_shape, b.eps, b.elementwise_affine)
    a, b = tnn.LayerNorm(16, bias=False), torch.nn.LayerNorm(16, bias=False)
    assert (a.normalized_shape, a.eps, a.elementwise_affine, a.bias) == (b.normalized_shape, b.eps,
                                                                           b.elementwise_affine, b.bias)


def test_device_dtype_and_meta():
    m = tnn.RMSNorm(8, dtype=torch.bfloat16)
    assert m.weight.dtype == torch.bfloat16
    m = tnn.LayerNorm(8, device="meta")
    assert m.weight.is_meta and m.bias.is_meta
    m = tnn.SwiGLU(8, 16, dtype=torch.float16)
    assert all(p.dtype == torch.float16 for p in m.parameters())


def test_rmsnorm_weight_offset():
    m = tnn.RMSNorm(8, weight_offset=1.0)
    assert torch.equal(m.weight, torch.zeros(8))  # effective scale weight + 1 == 1
    assert repr(m) == "RMSNorm((8,), eps=None, elementwise_affine=True, weight_offset=1.0)"
    assert list(m.state_dict()) == ["weight"]
    with pytest.raises(ValueError):
        tnn.RMSNorm(8, elementwise_affine=False, weight_offset=1.0)


@pytest.mark.parametrize("cls", [tnn.RMSNorm, tnn.LayerNorm])
@pytest.mark.parametrize("shape", [(4, 8), [4, 8], torch.Size([2, 3, 4])])
def test_norms_reject_more_than_the_last_dim(cls, shape):
    with pytest.raises(ValueError, match="last dimension"):
        cls(shape)


def test_cross_entropy_module():
    a = tnn.CrossEntropyLoss(ignore_index=3, reduction="sum", label_smoothing=0.1)
    b = torch.nn.CrossEntropyLoss(ignore_index=3, reduction="sum", label_smoothing=0.1)
    assert (a.ignore_index, a.reduction, a.label_smoothing) == (b.ignore_index, b.reduction, b.label_smoothing)
    assert list(a.state_dict()) == list(b.state_dict()) == []
    assert a.weight is None
    assert repr(a) == repr(b)
    with pytest.raises((ValueError, NotImplementedError), match="weight"):
        tnn.CrossEntropyLoss(weight=torch.ones(4))
    with pytest.raises(ValueError):
        tnn.CrossEntropyLoss(reduction="batchmean")
    with pytest.warns(UserWarning):  # torch's legacy arguments map as in torch
        legacy = tnn.CrossEntropyLoss(size_average=False)
    assert legacy.reduction == "sum"


def test_swiglu_keys_match_llama_mlp():
    m = tnn.SwiGLU(32, 96)
    assert list(m.state_dict()) == ["gate_proj.weight", "up_proj.weight", "down_proj.weight"]
    assert m.gate_proj.weight.shape == (96, 32) and m.down_proj.weight.shape == (32, 96)
    assert all(isinstance(p, torch.nn.Linear) for p in (m.gate_proj, m.up_proj, m.down_proj))
    m = tnn.SwiGLU(32, 96, 40, bias=True)
    assert list(m.state_dict()) == ["gate_proj.weight", "gate_proj.bias", "up_proj.weight", "up_proj.bias",
                                    "down_proj.weight", "down_proj.bias"]
    assert m.down_proj.weight.shape == (40, 96)
    assert "in_features=32, hidden_features=96, out_features=40, bias=True" in repr(m)

    if transformers is None:
        return
    from transformers.models.llama.modeling_llama import LlamaMLP

    cfg = transformers.LlamaConfig(hidden_size=32, intermediate_size=96, mlp_bias=False)
    hf = LlamaMLP(cfg)
    ours = tnn.SwiGLU(32, 96)
    assert list(ours.state_dict()) == list(hf.state_dict())
    ours.load_state_dict(hf.state_dict())


def test_modules_refuse_cpu_tensors():
    # The modules call Tachyon's CUDA kernels and nothing else: a CPU tensor is an error, not a fallback.
    with pytest.raises(Exception):
        tnn.RMSNorm(8)(torch.randn(2, 8))


# ---------------------------------------------------------------------------------------------
# patch()

SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=256)


def _families():
    """(name, config class, causal LM class, expected weight_offset, norms per layer) that exist."""
    out = []
    if transformers is None:
        return out
    for name, cfg, lm, offset, per_layer, extra in [
        ("llama", "LlamaConfig", "LlamaForCausalLM", 0.0, 2, {}),
        ("qwen2", "Qwen2Config", "Qwen2ForCausalLM", 0.0, 2, {}),
        ("qwen3", "Qwen3Config", "Qwen3ForCausalLM", 0.0, 4, {"head_dim": 16}),
        ("mistral", "MistralConfig", "MistralForCausalLM", 0.0, 2, {}),
        ("gemma", "GemmaConfig", "GemmaForCausalLM", 1.0, 2, {"head_dim": 16}),
        ("gemma2", "Gemma2Config", "Gemma2ForCausalLM", 1.0, 4, {"head_dim": 16}),
        ("gemma3", "Gemma3TextConfig", "Gemma3ForCausalLM", 1.0, 6, {"head_dim": 16}),
    ]:
        if hasattr(transformers, cfg) and hasattr(transformers, lm):
            out.append(pytest.param(getattr(transformers, cfg), getattr(transformers, lm), offset, per_layer,
                                    extra, id=name))
    return out


def _build(cfg_cls, lm_cls, extra):
    torch.manual_seed(0)
    return lm_cls(cfg_cls(**SMALL, **extra))


def _hf_norms(model):
    return {n: m for n, m in model.named_modules() if type(m).__name__.endswith("RMSNorm")
            and not isinstance(m, tnn.RMSNorm)}


@needs_transformers
@pytest.mark.parametrize("cfg_cls,lm_cls,offset,per_layer,extra", _families())
def test_patch_swaps_hf_rmsnorms_keeping_parameters(cfg_cls, lm_cls, offset, per_layer, extra):
    model = _build(cfg_cls, lm_cls, extra)
    before = _hf_norms(model)
    expected = per_layer * SMALL["num_hidden_layers"] + 1
    assert len(before) == expected
    params_before = {n: p for n, p in model.named_parameters(remove_duplicate=False)}
    keys_before = list(model.state_dict())
    eps = {n: getattr(m, "variance_epsilon", getattr(m, "eps", None)) for n, m in before.items()}

    out = patch(model)
    assert out is model
    assert model._tachyon_patched["rms_norm"] == expected
    assert model._tachyon_patched["replaced"] == {type(next(iter(before.values()))).__name__: expected}
    assert model._tachyon_patched["skipped"] == {}
    assert model._tachyon_patched["loss"] is None
    assert _hf_norms(model) == {}
    mods = dict(model.named_modules())
    for name, old in before.items():
        new = mods[name]
        assert isinstance(new, HFRMSNorm) and isinstance(new, tnn.RMSNorm)
        assert new.weight is old.weight  # the same Parameter object
        assert new.weight_offset == offset
        assert new.eps == eps[name] and new.variance_epsilon == eps[name]
        assert new.promote_output == (offset == 0.0)
        assert new.training == old.training
    params_after = {n: p for n, p in model.named_parameters(remove_duplicate=False)}
    assert params_after.keys() == params_before.keys()
    assert all(params_after[n] is params_before[n] for n in params_before)
    assert list(model.state_dict()) == keys_before

    # Idempotent: a second call finds nothing more to replace.
    patch(model)
    assert model._tachyon_patched["rms_norm"] == expected
    assert all(isinstance(m, HFRMSNorm) for n, m in model.named_modules() if n in before)


@needs_transformers
def test_patch_loss_is_per_instance():
    from tachyon.patch import tachyon_causal_lm_loss
    from transformers.loss.loss_utils import ForCausalLMLoss

    cfg = transformers.LlamaConfig(**SMALL)
    a, b = transformers.LlamaForCausalLM(cfg), transformers.LlamaForCausalLM(cfg)
    assert a.loss_function is ForCausalLMLoss
    patch(a, norms=False, loss=True)
    assert a.loss_function is tachyon_causal_lm_loss
    assert a._tachyon_patched["loss"] == "ForCausalLMLoss"
    assert a._tachyon_patched["rms_norm"] == 0 and len(_hf_norms(a)) == 5
    assert b.loss_function is ForCausalLMLoss  # nothing global changed
    assert copy.deepcopy(a).loss_function is tachyon_causal_lm_loss
    patch(a, loss=True)  # norms now, loss again: no error
    assert a._tachyon_patched["rms_norm"] == 5 and _hf_norms(a) == {}


@needs_transformers
def test_patch_loss_refuses_what_it_cannot_replace():
    with pytest.raises(TypeError):
        patch(torch.nn.Sequential(torch.nn.Linear(4, 4)), loss=True)
    cfg = transformers.LlamaConfig(**SMALL, num_labels=3)
    model = transformers.LlamaForSequenceClassification(cfg)
    with pytest.raises(NotImplementedError, match="ForSequenceClassification"):
        patch(model, norms=False, loss=True)


def test_patch_torch_norms_and_skips():
    class Custom(torch.nn.LayerNorm):  # overrides forward: left alone
        def forward(self, x):
            return super().forward(x) * 2

    class OddRMSNorm(torch.nn.Module):  # an *RMSNorm with arithmetic Tachyon does not know
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(8))
            self.eps = 1e-6

        def forward(self, x):
            return x * self.weight.sigmoid()

    shared = torch.nn.LayerNorm(8)
    model = torch.nn.ModuleDict({
        "ln": torch.nn.LayerNorm(8, bias=False),
        "rms": torch.nn.RMSNorm(8, eps=None),
        "seq": torch.nn.Sequential(torch.nn.Linear(8, 8), shared, torch.nn.RMSNorm((8,), elementwise_affine=False)),
        "shared_again": shared,
        "ln2d": torch.nn.LayerNorm((4, 8)),
        "custom": Custom(8),
        "odd": OddRMSNorm(),
    })
    model.eval()
    hook_calls = []
    handle = model["rms"].register_forward_hook(lambda *a: hook_calls.append(1))
    w_ln, w_rms, w_shared, b_shared = model["ln"].weight, model["rms"].weight, shared.weight, shared.bias

    patch(model)
    rec = model._tachyon_patched
    assert rec["layer_norm"] == 2 and rec["rms_norm"] == 2
    assert rec["replaced"] == {"LayerNorm": 2, "RMSNorm": 2}
    assert set(rec["skipped"]) == {"ln2d", "odd"}
    assert type(model["ln"]) is tnn.LayerNorm and model["ln"].weight is w_ln and model["ln"].bias is None
    assert type(model["rms"]) is tnn.RMSNorm and model["rms"].weight is w_rms and model["rms"].eps is None
    assert type(model["seq"][1]) is tnn.LayerNorm and model["seq"][1] is model["shared_again"]
    assert model["seq"][1].weight is w_shared and model["seq"][1].bias is b_shared
    assert type(model["seq"][2]) is tnn.RMSNorm and model["seq"][2].weight is None
    assert type(model["ln2d"]) is torch.nn.LayerNorm and type(model["custom"]) is Custom
    assert type(model["odd"]) is OddRMSNorm
    assert not model["ln"].training
    assert len(model["rms"]._forward_hooks) == 1  # hooks move with the module
    handle.remove()
    assert len(model["rms"]._forward_hooks) == 0
