"""Every family on tiny random models (built offline, tests/tiny_models.py): the attention the walk reads is the
model's own eager attention, the walk reproduces the attention module, the stream leaves nothing behind, and
``verify`` passes.  Then the adapters' weight layouts one by one (fused QKV, Conv1D, post-norm gains).
"""
import re
import sys
import threading
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1]))
import tiny_models
from tiny_models import FAMILIES, NEW, build

from connlap_lite import ConnectionWalk, attention_walks, head_transports, stochasticity_defect
from connlap_lite.models import rebuild
from connlap_lite.models.adapters import (FAMILIES as ADAPTERS, PROTOCOL, TESTED, Adapter, adapter_for, describe,
                                          gpt_neox)
from connlap_lite.models.extraction import tolerance
from connlap_lite.models.verify import check, verify

TOL = 1e-5


def unequal_batch():
    ids = torch.randint(2, 100, (3, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3, [1] * 2 + [0] * 6])
    return {"input_ids": ids, "attention_mask": mask}


def rel(a, b):
    a, b = a.detach(), b.detach()
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


def implementations(name):
    """The attention implementations the family's model accepts: eager always, SDPA where the class has it."""
    model = build(name)
    return ["eager", "sdpa"] if type(model)._supports_sdpa else ["eager"]


CASES = [(name, impl) for name in FAMILIES for impl in implementations(name)]


def hooks(model):
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def clean(model, before=0):
    """Nothing of a stream is left: no hook beyond the ``before`` the model had (transformers keeps its own once
    ``output_attentions`` was asked), no worker thread, no route."""
    return (hooks(model) == before and not any(t.name == "connlap-forward" for t in threading.enumerate())
            and not rebuild._ROUTES and not rebuild._SWITCHED)


def test_at_least_twelve_families_beyond_the_first_six():
    assert len(NEW) >= 12 and len(FAMILIES) == len(set(FAMILIES))
    kinds = {build(name).config.model_type for name in FAMILIES}
    assert kinds <= set(ADAPTERS)


def test_the_tested_families_are_what_the_tests_build():
    """adapters.TESTED, which the reading chapter and the README list, is exactly the model types built here."""
    assert TESTED == tuple(build(name).config.model_type for name in FAMILIES)
    assert set(TESTED) <= set(ADAPTERS)


def test_the_readme_lists_the_tested_families():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    listed = re.search(r"Model types tested on tiny random models[^:]*:(.*?)\.(?:\s|$)", readme, re.S)
    assert listed, "README: the sentence listing the tested model types is gone"
    assert tuple(re.findall(r"`([\w-]+)`", listed.group(1))) == TESTED, "README's list is not adapters.TESTED"


def eager_reference(eager, batch) -> tuple:
    """The eager model's own attention weights, per layer, and its attention modules' outputs on ``batch``: what
    the walks are compared with (no code of ours between the model and these)."""
    adapter = adapter_for(eager)
    outputs = []
    handles = [m.register_forward_hook(lambda mod, args, out, l=l: outputs.append(adapter.module_output(eager, l, out)))
               for l, m in enumerate(adapter.layers(eager))]
    try:
        with torch.no_grad():
            reference = eager(**batch, output_attentions=True, use_cache=False).attentions
    finally:
        for h in handles:
            h.remove()
    return reference, outputs


@pytest.mark.parametrize("name, implementation", CASES)
def test_attention_is_the_models_own_and_the_walk_reproduces_the_module(name, implementation):
    """P against the weights the model's own eager attention returns (output_attentions, no code of ours), on a
    padded batch; the module's output in the stream is the eager model's; the walk of every passage reproduces it;
    nothing left behind."""
    eager = build(name)
    model = build(name, implementation)
    model.load_state_dict(eager.state_dict())
    batch = unequal_batch()
    tokens = batch["attention_mask"].bool()
    reference, outputs = eager_reference(eager, batch)
    before = model.config._attn_implementation
    seen = 0
    for lw in attention_walks(model, batch, progress=False, attention="logits"):
        P, E = lw.attention, reference[lw.layer]
        assert P.dtype == torch.float32 and P.shape == E.shape
        assert float((P - E).abs().amax((1, 3))[tokens].max()) <= TOL, (name, lw.layer)
        for i, length in enumerate(tokens.sum(1).tolist()):
            walk = lw.walk(i)
            assert walk.n == length
            assert rel(walk(lw.section(i)), lw.reference(i)) < TOL, (name, lw.layer, i)
            assert rel(lw.reference(i), outputs[lw.layer][i][tokens[i]]) < TOL         # the module's, as eager's
            if name == "gpt_oss":                     # sink logits: rows keep the mass the model gives them
                assert float(walk.P.sum(1).max()) < 1 - 1e-3 and float(stochasticity_defect(walk.P)) > 1e-3
            else:
                assert float(stochasticity_defect(walk.P)) < 1e-5
        seen += 1
    assert seen == 2
    assert model.config._attn_implementation == before and clean(model)


@pytest.mark.parametrize("name", FAMILIES)
def test_eager_source_is_the_models_eager_weights(name):
    """``attention="eager"`` hands over the weights the model's eager function returned, bit for bit."""
    model = build(name)
    batch = unequal_batch()
    with torch.no_grad():
        reference = model(**batch, output_attentions=True, use_cache=False).attentions
    before = hooks(model)
    for lw in attention_walks(model, batch, progress=False):       # auto: an eager model reads its weights
        assert torch.equal(lw.attention, reference[lw.layer])
    assert clean(model, before)


@pytest.mark.parametrize("name", FAMILIES)
def test_early_break_and_an_error_leave_nothing_behind(name):
    model = build(name, implementations(name)[-1])
    before = model.config._attn_implementation
    stream = attention_walks(model, unequal_batch(), progress=False)
    first = next(stream)
    stream.close()
    assert model.config._attn_implementation == before and clean(model)
    assert first.attention.shape[:2] == (3, describe(model)["heads"])      # built after the stream ended
    with pytest.raises(RuntimeError, match="boom"):
        for lw in attention_walks(model, unequal_batch(), progress=False):
            raise RuntimeError("boom")
    assert model.config._attn_implementation == before and clean(model)
    with pytest.raises(ValueError, match=r"layers must hold indices in \[0, 2\)"):
        next(attention_walks(model, unequal_batch(), layers=[2]))
    assert clean(model)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return tmp_path_factory.mktemp("families")


@pytest.mark.parametrize("name", FAMILIES)
def test_verify_command_passes_on_every_family(name, folders, capsys):
    from connlap_lite.__main__ import main

    folder = tiny_models.save_family(name, folders / name)
    assert main(["verify", str(folder), "--passages", "2", "--tokens", "12"]) == 0
    out = capsys.readouterr().out
    assert "every layer within 1e-4" in out and out.count("MISSES") == 0


def test_a_module_outside_the_interface_is_refused_by_name(monkeypatch):
    """A model whose attention module never calls the registered function: a clear error, and nothing left."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    monkeypatch.setattr(rebuild, "attention_function", lambda module, *a, **kw: sdpa_attention_forward(module, *a, **kw))
    rebuild.register()
    model = build("llama", "sdpa")
    try:
        with pytest.raises(RuntimeError, match=r"LlamaForCausalLM \(model type 'llama'\) does not route its attention "
                                               r"through transformers' AttentionInterface.*supported families: .*llama"):
            next(attention_walks(model, unequal_batch(), progress=False))
    finally:
        monkeypatch.undo()
        rebuild.register()
    assert clean(model) and model.config._attn_implementation == "sdpa"


# ---- the weight layouts, family by family ----

def test_neox_fused_qkv_is_read_head_by_head():
    model = build("gpt_neox")
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


def test_phi3_fused_qkv_values_follow_every_query_and_key():
    model = build("phi3")
    W = model.model.layers[0].self_attn.qkv_proj.weight             # 4 query heads, 2 key groups, head_dim 8
    Wo = model.model.layers[0].self_attn.o_proj.weight
    heads = head_transports(model, 0)
    for h in range(4):
        g = h // 2
        assert rel(heads.dense()[h], Wo[:, 8 * h:8 * h + 8] @ W[48 + 8 * g:56 + 8 * g]) < 1e-6


def test_neox_section_is_the_layernorm_with_its_bias():
    """norm_gain is the LayerNorm's weight; its bias is in the section the walk transports."""
    model = build("gpt_neox")
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


def test_t1_head_by_head():
    model = build("roberta")
    lw = next(attention_walks(model, unequal_batch(), progress=False))
    keep = lw.tokens[1]
    T = lw.transports.dense()
    total = sum(ConnectionWalk(lw.attention[1, h][keep][:, keep], T[h])(lw.section(1)) for h in range(T.shape[0]))
    assert lw.transports.offset is not None                  # random value and output biases
    assert rel(total + lw.transports.offset, lw.reference(1)) < 1e-5


@pytest.mark.parametrize("name, family, heads, groups, head_dim, encoder", [
    ("gpt_neox", "gpt_neox", 4, 4, 8, False), ("roberta", "roberta", 4, 4, 8, True),
    ("llama", "llama", 4, 2, 8, False), ("gemma3", "gemma3_text", 4, 2, 16, False),
    ("phi3", "phi3", 4, 2, 8, False), ("distilbert", "distilbert", 4, 4, 8, True),
    ("electra", "electra", 4, 4, 8, True), ("gpt_oss", "gpt_oss", 4, 2, 8, False)])
def test_describe(name, family, heads, groups, head_dim, encoder):
    assert describe(build(name)) == {"family": family, "layers": 2, "heads": heads, "groups": groups, "d": 32,
                                     "head_dim": head_dim, "encoder": encoder}


def test_every_model_type_has_an_adapter_with_the_whole_protocol():
    wanted = [k for k in vars(Adapter) if not k.startswith("_")]
    assert set(wanted) == set(PROTOCOL) == {"layers", "shape", "value_output", "pre_norm", "norm_gain", "module_output"}
    for kind, adapter in ADAPTERS.items():
        for fn in wanted:
            assert callable(getattr(adapter, fn)), (kind, fn)
        assert not hasattr(adapter, "logits") and not hasattr(adapter, "mask")      # the model gives those


def test_norm_gains():
    """The gain folded into the heads is the norm feeding the attention: pre-norm weight, Gemma's 1 + w, none
    where the norm has no weight (OLMo) or there is no pre-norm (OLMo2), post-norm the previous layer's."""
    from connlap_lite.models.adapters import bert, distilbert, llama

    gemma = build("gemma2")
    assert torch.equal(llama.norm_gain(gemma, 1), 1 + gemma.model.layers[1].input_layernorm.weight)
    assert llama.norm_gain(build("olmo"), 0) is None and llama.norm_gain(build("olmo2"), 0) is None
    qwen = build("qwen3")
    assert llama.norm_gain(qwen, 1) is qwen.model.layers[1].input_layernorm.weight
    for adapter, model, base, norm in ((bert, build("bert"), "encoder", "output"),
                                       (distilbert, build("distilbert"), "transformer", "output_layer_norm")):
        inner = getattr(model, "distilbert", model)
        assert adapter.norm_gain(model, 0) is inner.embeddings.LayerNorm.weight
        layer = getattr(inner, base).layer[0]
        expected = layer.output.LayerNorm.weight if norm == "output" else layer.output_layer_norm.weight
        assert adapter.norm_gain(model, 1) is expected


@pytest.mark.parametrize("name", ["gpt_neox", "roberta", "phi3", "gemma2"])
def test_verify_passes_the_right_adapter(name):
    rows = verify(build(name), unequal_batch())
    assert [r["layer"] for r in rows] == [0, 1]
    assert all(r["error"] < 1e-5 for r in rows)
    assert check(build(name), unequal_batch()) == rows


def gpt2_style_reading(model, layer):
    """The mistake check() is for: NeoX's fused qkv read as GPT-2's (all values in the last third)."""
    a = model.gpt_neox.layers[layer].attention
    return a.query_key_value.weight[64:], a.query_key_value.bias[64:], a.dense.weight, a.dense.bias


def test_check_refuses_a_misread_architecture(monkeypatch):
    model = build("gpt_neox")
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
    model = build("roberta")
    adapter = ADAPTERS["roberta"]
    right = adapter.module_output
    monkeypatch.setattr(adapter, "module_output",
                        lambda m, layer, out: right(m, layer, out) * (1.5 if layer == 1 else 1.0))
    with pytest.raises(ValueError, match=r"^layer 1 of roberta: the walk misses the module's output by 3\.3e-1 "):
        check(model, unequal_batch())
    assert check(model, unequal_batch(), layers=[0])[0]["layer"] == 0


@pytest.mark.parametrize("tol", [0, -1e-4, float("nan"), "1e-4", True])
def test_check_refuses_a_bad_tol(tol):
    with pytest.raises(ValueError, match="tol must be a positive number"):
        check(build("roberta"), unequal_batch(), tol)


def test_unsupported_family_lists_the_supported_ones():
    class Other(torch.nn.Module):
        config = type("C", (), {"model_type": "t5"})()
    with pytest.raises(ValueError, match="unsupported architecture 't5'.*supported families: .*gpt_neox.*phi3"):
        describe(Other())


@pytest.mark.parametrize("dtype, default", [(torch.bfloat16, 2 ** -5), (torch.float16, 2 ** -8)])
def test_half_precision_has_its_own_default_tolerance(dtype, default, monkeypatch):
    """Half precision rounds the module's own output: 1e-4 would refuse a right adapter there."""
    model = build("gpt_neox").to(dtype)
    assert tolerance(model) == default
    rows = check(model, unequal_batch())
    assert all(1e-4 < r["error"] < default / 4 for r in rows), rows
    with pytest.raises(ValueError, match=r"layer 0 of gpt_neox: .*\(> 1e-4\)"):
        check(model, unequal_batch(), 1e-4)
    monkeypatch.setattr(gpt_neox, "value_output", gpt2_style_reading)      # a misread adapter is still refused
    assert all(r["error"] > 10 * default for r in verify(model, unequal_batch()))
