"""The GPT-NeoX and RoBERTa-style adapters, describe() and verify() on tiny random models (built offline).

Every norm gain and bias is drawn at random (a fresh model has zero biases and unit gains, which
would hide a misread bias layout or a LayerNorm bias taken for part of the transport).
"""
import math
import sys
from pathlib import Path

import pytest
import torch
from transformers import (AutoModel, AutoModelForCausalLM, CamembertConfig, GPTNeoXConfig, RobertaConfig,
                          XLMRobertaConfig)

from connlap_lite import ConnectionWalk, attention_walks, head_transports
from connlap_lite.adapters import FAMILIES, adapter_for, describe, gpt_neox
from connlap_lite.adapters._linear import rotary
from connlap_lite.verify import check, tolerance, verify

ENCODER = dict(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64, vocab_size=100,
               max_position_embeddings=64)
NEOX = dict(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64, vocab_size=100,
            max_position_embeddings=64)

CONFIGS = {
    "neox-parallel-quarter-rotary": lambda: GPTNeoXConfig(**NEOX, rotary_pct=0.25),        # Pythia's layout
    "neox-sequential-full-rotary": lambda: GPTNeoXConfig(**NEOX, rotary_pct=1.0, use_parallel_residual=False),
    "roberta": lambda: RobertaConfig(**ENCODER),
    "xlm-roberta": lambda: XLMRobertaConfig(**ENCODER),
    "camembert": lambda: CamembertConfig(**ENCODER),
}


def tiny(name):
    torch.manual_seed(0)
    config = CONFIGS[name]()
    auto = AutoModelForCausalLM if config.model_type == "gpt_neox" else AutoModel
    model = auto.from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():
        for key, p in model.named_parameters():
            if key.endswith("bias"):
                p.normal_(0.0, 0.02)             # the scale of the weights
            elif p.ndim == 1:                        # norm gains
                p.normal_(1.0, 0.3)
    return model


def unequal_batch():
    ids = torch.randint(2, 100, (3, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3, [1] * 2 + [0] * 6])
    return {"input_ids": ids, "attention_mask": mask}


def rel(a, b):
    a, b = a.detach(), b.detach()
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_t2_reconstructs_every_layer_with_padding(name):
    model = tiny(name)
    batch = unequal_batch()
    seen = 0
    for lw in attention_walks(model, batch, progress=False):
        for i, length in enumerate(batch["attention_mask"].sum(1).tolist()):
            walk = lw.walk(i)
            assert walk.n == length
            assert rel(walk(lw.section(i)), lw.reference(i)) < 1e-5
        seen += 1
    assert seen == 2


@pytest.mark.parametrize("name", list(CONFIGS))
def test_t1_head_by_head(name):
    model = tiny(name)
    lw = next(attention_walks(model, unequal_batch(), progress=False))
    keep = lw.tokens[1]
    X = lw.section(1)
    T = lw.transports.dense()
    total = sum(ConnectionWalk(lw.attention[1, h][keep][:, keep], T[h])(X) for h in range(T.shape[0]))
    assert lw.transports.offset is not None                  # random value and output biases
    assert rel(total + lw.transports.offset, lw.reference(1)) < 1e-5


def hooked_inputs(model):
    """Run the model once, keeping each attention module's inputs and its attention weights."""
    seen = []
    handles = [m.register_forward_hook(lambda mod, args, kwargs, out: seen.append((args, kwargs, out[1])),
                                       with_kwargs=True) for m in adapter_for(model).layers(model)]
    try:
        with torch.no_grad():
            model(**unequal_batch(), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return seen


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_give_the_eager_attention(name):
    model = tiny(name)
    adapter = adapter_for(model)
    real = unequal_batch()["attention_mask"].bool()
    n = real.shape[1]
    allowed = real[:, None, None, :].expand(-1, 1, n, n)              # padding keys are never attended
    if adapter.mask(model, 0)["causal"]:
        allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
    for layer, (args, kwargs, attention) in enumerate(hooked_inputs(model)):
        with torch.no_grad():
            scores = adapter.logits(model, layer, args, kwargs)
        assert scores.shape == attention.shape == (3, 4, n, n)
        probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
        assert float((probs - attention).abs().max()) < 1e-5


def test_neox_logits_rotate_only_the_rotary_part():
    """With rotary_pct = 1/4 the last three quarters of each head's query and key are not rotated."""
    model = tiny("neox-parallel-quarter-rotary")
    args, kwargs, attention = hooked_inputs(model)[0]
    hidden = args[0] if args else kwargs["hidden_states"]
    a = model.gpt_neox.layers[0].attention
    qkv = a.query_key_value(hidden).reshape(3, 8, 4, 3, 8)
    q, k = qkv[..., 0, :].transpose(1, 2), qkv[..., 1, :].transpose(1, 2)
    cos, sin = kwargs["position_embeddings"]
    assert cos.shape[-1] == 2                                            # 8 * 0.25 coordinates rotate
    for x in (q, k):                                                     # a rotation by the position angle
        y = rotary(x, cos, sin)
        assert torch.equal(y[..., 2:], x[..., 2:])
        assert torch.allclose(y[..., :2].norm(dim=-1), x[..., :2].norm(dim=-1), atol=1e-6)
    plain = q[..., 2:] @ k[..., 2:].transpose(-1, -2)
    rotated = rotary(q, cos, sin)[..., :2] @ rotary(k, cos, sin)[..., :2].transpose(-1, -2)
    with torch.no_grad():
        scores = gpt_neox.logits(model, 0, args, kwargs)
    assert rel(scores, (plain + rotated) / math.sqrt(8)) < 1e-6


def test_neox_fused_qkv_is_read_head_by_head():
    model = tiny("neox-parallel-quarter-rotary")
    sd = model.state_dict()
    qkv = "gpt_neox.layers.1.attention.query_key_value"
    W, b = sd[f"{qkv}.weight"], sd[f"{qkv}.bias"]
    P, bp = sd["gpt_neox.layers.1.attention.dense.weight"], sd["gpt_neox.layers.1.attention.dense.bias"]
    heads = head_transports(model, 1)
    for h in range(4):                        # head h's rows: query 24h..24h+8, key .. +16, value .. +24
        Wv = W[24 * h + 16:24 * h + 24]
        assert rel(heads.dense()[h], P[:, 8 * h:8 * h + 8] @ Wv) < 1e-6
    value_bias = torch.cat([b[24 * h + 16:24 * h + 24] for h in range(4)])
    assert rel(heads.offset, P @ value_bias + bp) < 1e-6


def test_neox_section_is_the_layernorm_with_its_bias():
    """norm_gain is the LayerNorm's weight; its bias is in the section the walk transports."""
    model = tiny("neox-parallel-quarter-rotary")
    batch = unequal_batch()
    with torch.no_grad():
        residual = model(**batch, output_hidden_states=True, use_cache=False).hidden_states
    for lw in attention_walks(model, batch, progress=False):
        norm = gpt_neox.pre_norm(model, lw.layer)
        assert isinstance(norm, torch.nn.LayerNorm) and norm.bias is not None
        assert gpt_neox.norm_gain(model, lw.layer) is norm.weight
        x = residual[lw.layer][0]
        expected = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + norm.eps)
        assert rel(lw.inputs[0], expected * norm.weight + norm.bias) < 1e-5


@pytest.mark.parametrize("name, family, encoder", [
    ("neox-parallel-quarter-rotary", "gpt_neox", False), ("roberta", "roberta", True),
    ("xlm-roberta", "xlm-roberta", True), ("camembert", "camembert", True)])
def test_describe(name, family, encoder):
    assert describe(tiny(name)) == {"family": family, "layers": 2, "heads": 4, "groups": 4, "d": 32,
                                    "head_dim": 8, "encoder": encoder}


def test_describe_of_the_existing_families():
    sys.path.insert(0, str(Path(__file__).parent))
    from test_extraction import tiny as tiny_existing

    assert describe(tiny_existing("llama-gqa")) == {"family": "llama", "layers": 2, "heads": 4, "groups": 2,
                                                    "d": 32, "head_dim": 8, "encoder": False}
    assert describe(tiny_existing("gemma3-local-global"))["head_dim"] == 16          # head_dim * H != d
    assert describe(tiny_existing("bert"))["encoder"] is True


def test_every_model_type_has_an_adapter_with_the_whole_protocol():
    for kind, adapter in FAMILIES.items():
        for fn in ("layers", "shape", "value_output", "pre_norm", "norm_gain", "module_output", "mask"):
            assert callable(getattr(adapter, fn)), (kind, fn)
    for adapter in (FAMILIES["gpt_neox"], FAMILIES["roberta"]):
        assert callable(adapter.logits)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_verify_passes_the_right_adapter(name):
    rows = verify(tiny(name), unequal_batch())
    assert [r["layer"] for r in rows] == [0, 1]
    assert all(r["error"] < 1e-5 for r in rows)
    assert check(tiny(name), unequal_batch()) == rows


def gpt2_style_reading(model, layer):
    """The mistake check() is for: NeoX's fused qkv read as GPT-2's (all values in the last third)."""
    a = model.gpt_neox.layers[layer].attention
    return a.query_key_value.weight[64:], a.query_key_value.bias[64:], a.dense.weight, a.dense.bias


def test_check_refuses_a_misread_architecture(monkeypatch):
    model = tiny("neox-parallel-quarter-rotary")
    monkeypatch.setattr(gpt_neox, "value_output", gpt2_style_reading)
    rows = verify(model, unequal_batch())
    assert all(r["error"] > 0.1 for r in rows), rows
    with pytest.raises(ValueError) as info:
        check(model, unequal_batch())
    message = str(info.value)
    assert "layer 0 of gpt_neox: the walk misses the module's output by" in message
    assert "layer 1 of gpt_neox" in message and "(> 1e-4)" in message
    assert "the adapter misreads this architecture" in message and "adapters/gpt_neox.py" in message


def test_check_names_only_the_layers_that_miss(monkeypatch):
    model = tiny("roberta")
    right = FAMILIES["roberta"].module_output
    monkeypatch.setattr(FAMILIES["roberta"], "module_output",
                        lambda m, layer, out: right(m, layer, out) * (1.5 if layer == 1 else 1.0))
    with pytest.raises(ValueError, match=r"^layer 1 of roberta: the walk misses the module's output by 3\.3e-1 "):
        check(model, unequal_batch())
    assert check(model, unequal_batch(), layers=[0])[0]["layer"] == 0


@pytest.mark.parametrize("tol", [0, -1e-4, float("nan"), "1e-4", True])
def test_check_refuses_a_bad_tol(tol):
    with pytest.raises(ValueError, match="tol must be a positive number"):
        check(tiny("roberta"), unequal_batch(), tol)


def test_unsupported_family_lists_the_new_ones():
    class Other(torch.nn.Module):
        config = type("C", (), {"model_type": "t5"})()
    with pytest.raises(ValueError, match="supported families: .*gpt_neox.*roberta/xlm-roberta/camembert"):
        describe(Other())


@pytest.mark.parametrize("dtype, default", [(torch.bfloat16, 2 ** -5), (torch.float16, 2 ** -8)])
def test_half_precision_has_its_own_default_tolerance(dtype, default, monkeypatch):
    """Half precision rounds the module's own output: 1e-4 would refuse a right adapter there."""
    model = tiny("neox-parallel-quarter-rotary").to(dtype)
    assert tolerance(model) == default
    rows = check(model, unequal_batch())
    assert all(1e-4 < r["error"] < default / 4 for r in rows), rows
    with pytest.raises(ValueError, match=r"layer 0 of gpt_neox: .*\(> 1e-4\)"):
        check(model, unequal_batch(), 1e-4)
    monkeypatch.setattr(gpt_neox, "value_output", gpt2_style_reading)      # a misread adapter is still refused
    assert all(r["error"] > 10 * default for r in verify(model, unequal_batch()))


def test_post_norm_gain_is_the_norm_that_feeds_the_attention():
    """BERT and RoBERTa are post-norm: layer l's attention reads the output of layer l-1's output LayerNorm
    (the embeddings' LayerNorm for layer 0), so that norm's gain is the one folded into the heads."""
    from connlap_lite.adapters import bert, roberta
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    small = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=64, vocab_size=99)
    for adapter, model in ((bert, BertModel(BertConfig(**small))), (roberta, RobertaModel(RobertaConfig(**small)))):
        assert adapter.norm_gain(model, 0) is model.embeddings.LayerNorm.weight
        for layer in (1, 2):
            assert adapter.norm_gain(model, layer) is model.encoder.layer[layer - 1].output.LayerNorm.weight
