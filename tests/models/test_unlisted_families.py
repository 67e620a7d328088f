"""Model types not in ``adapters.FAMILIES`` read through the layout their attention modules have (Llama's
``q/k/v/o_proj``), checked on the spot against the model's own attention: exact walks with a warning that names
the type untested; refused by name where no layout fits or the check misses.
"""
import sys
import warnings
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1]))
import tiny_models
from tiny_models import UNLISTED, build

from connlap_lite import attention_walks, stochasticity_defect
from connlap_lite.models.adapters import FAMILIES, READ, TESTED, UntestedFamily, _probe, _written, adapter_for, llama

from test_families import TOL, clean, eager_reference, rel, unequal_batch


def test_the_unlisted_types_are_neither_listed_nor_tested():
    kinds = [build(name).config.model_type for name in UNLISTED]
    assert kinds == list(UNLISTED) and not set(kinds) & (set(FAMILIES) | set(TESTED))


@pytest.mark.parametrize("name", UNLISTED)
@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_an_unlisted_type_with_a_known_layout_streams_exact_walks(name, implementation):
    """The comparison of tests/models/test_families.py: P against the eager model's own attention weights, the walk of
    every passage against the module, the module against the eager model's; one warning, naming the type."""
    eager = build(name)
    model = build(name, implementation)
    model.load_state_dict(eager.state_dict())
    batch = unequal_batch()
    tokens = batch["attention_mask"].bool()
    adapter = adapter_for(eager)                 # unchecked (no walk): the layout, read from the modules
    assert adapter is llama and not hasattr(eager, READ)
    reference, outputs = eager_reference(eager, batch)
    with pytest.warns(UntestedFamily, match=rf"model type '{name}' is untested .* read through the llama layout "
                                            r"\(connlap_lite/models/adapters/llama.py\), whose walk reproduces") as caught:
        walks = attention_walks(model, batch, progress=False, attention="logits")
        first = next(walks)
    assert len([w for w in caught if w.category is UntestedFamily]) == 1
    seen = 0
    for lw in [first, *walks]:
        P, E = lw.attention, reference[lw.layer]
        assert float((P - E).abs().amax((1, 3))[tokens].max()) <= TOL, (name, lw.layer)
        for i in range(tokens.shape[0]):
            assert rel(lw.walk(i)(lw.section(i)), lw.reference(i)) < TOL, (name, lw.layer, i)
            assert rel(lw.reference(i), outputs[lw.layer][i][tokens[i]]) < TOL
            assert float(stochasticity_defect(lw.walk(i).P)) < 1e-5
        seen += 1
    assert seen == 2 and clean(model)
    with warnings.catch_warnings():              # checked once per model: no second check, no second warning
        warnings.simplefilter("error")
        assert len(list(attention_walks(model, batch, progress=False))) == 2
        assert adapter_for(model).__name__ == "connlap_lite.models.adapters.llama"


@pytest.mark.parametrize("name, norm", [("exaone4", "post_attention_layernorm"),
                                        ("glm4", "post_self_attn_layernorm"), ("arcee", None)])
def test_the_norm_on_the_attentions_output_is_found_by_the_check(name, norm):
    """EXAONE 4 and GLM-4 normalise the attention's output before the residual sum: the checked adapter's
    ``written`` names that norm (the rival readings replace the update there); Arcee adds it as it is."""
    model = build(name)
    with pytest.warns(UntestedFamily):
        next(attention_walks(model, unequal_batch(), progress=False))
    written = adapter_for(model).written
    for l, block in enumerate(model.model.layers):
        assert written(model, l) is (None if norm is None else getattr(block, norm))


@pytest.mark.parametrize("name", ["gemma2", "olmo2", "llama", "qwen2"])
def test_the_norm_found_is_the_one_the_tested_families_name(name):
    """Where the adapter names it by model type (llama.NORMED_OUTPUT), the forward finds the same module."""
    model = build(name)
    found = _written(model, llama, _probe(model))
    assert [None if n is None else model.get_submodule(n) for n in found] == [llama.written(model, l)
                                                                              for l in range(2)]


def test_an_unknown_layout_is_refused_by_name():
    class Mystery(torch.nn.Module):
        config = type("C", (), {"model_type": "mystery"})()

        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4)])
    with pytest.raises(ValueError, match=r"unsupported architecture 'mystery' \(Mystery\); supported families: "
                                         r"bert/.*; a model type not among them is read through a known weight "
                                         r"layout, and its attention modules have none \(llama: layers\[i\]\.self_attn "
                                         r"with q_proj, k_proj, v_proj and o_proj .*add an adapter for its layout"):
        next(attention_walks(Mystery(), unequal_batch()))


def test_a_real_model_of_an_unknown_layout_is_refused_by_name():
    from transformers import AutoModelForCausalLM, MambaConfig

    model = AutoModelForCausalLM.from_config(MambaConfig(num_hidden_layers=2, hidden_size=32, vocab_size=100)).eval()
    with pytest.raises(ValueError, match=r"unsupported architecture 'mamba' \(MambaForCausalLM\).*none \(llama: "):
        next(attention_walks(model, unequal_batch()))
    assert not hasattr(model, READ)


def test_a_layout_whose_check_misses_is_refused(monkeypatch):
    """The layout fits but the walk read through it misses the module (here: a value map read wrong): refused,
    naming the type, the layout and the layer, and nothing is kept or left behind."""
    right = llama.value_output

    def misread(model, layer):
        W_v, b_v, W_o, b_o = right(model, layer)
        return 1.5 * W_v, b_v, W_o, b_o
    monkeypatch.setattr(llama, "value_output", misread)
    model = build("arcee", "sdpa")
    with pytest.raises(ValueError, match=r"model type 'arcee' \(ArceeForCausalLM\) is not among the tested families; "
                                         r"its attention modules have the llama layout .*, but its walk read through "
                                         r"that layout failed the check against them on a few tokens \(layer 0: the "
                                         r"walk misses the module's output by 5\.0e-01 \(> 1e-04\)\): add an adapter"):
        next(attention_walks(model, unequal_batch()))
    assert not hasattr(model, READ) and clean(model) and model.config._attn_implementation == "sdpa"


def test_a_saved_folder_of_an_unlisted_type_loads_and_verifies(tmp_path, capsys):
    """The config no longer refuses the type: load_model builds its modules without weights, finds the layout,
    loads it; ``verify`` then passes with the warning."""
    from connlap_lite.__main__ import main

    folder = tiny_models.save_family("seed_oss", tmp_path / "seed_oss")
    with pytest.warns(UntestedFamily, match="model type 'seed_oss' is untested"):
        assert main(["verify", str(folder), "--passages", "2", "--tokens", "12"]) == 0
    assert "every layer within 1e-4" in capsys.readouterr().out
