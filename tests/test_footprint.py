"""connlap_lite.footprint: sizes from a configuration alone, against a model built for real."""
import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

from connlap_lite.adapters import describe
from connlap_lite.analysis import EDGE_PASSAGES, EDGES
from connlap_lite.footprint import SHAPES, config_of, footprint


def test_footprint_counts_what_a_built_model_has():
    config = LlamaConfig(hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
                         num_key_value_heads=2, vocab_size=100, dtype="bfloat16")
    model = AutoModelForCausalLM.from_config(config)
    f = footprint(config, 3, 10)
    facts = describe(model)
    assert f["parameters"] == sum(p.numel() for p in model.parameters())
    assert f["weight_bytes"] == 2 * f["parameters"]                      # the config's bfloat16
    assert all(f[k] == facts[k] for k in ("layers", "heads", "groups", "d", "head_dim"))
    assert f["attention_bytes"] == 3 * 6 * 10 * 10 * 4
    assert f["head_bytes"] == 8 * 48 * 48                                # d x H d_h float64 (H d_h = d here)
    assert f["edge_bytes"] == 8 * EDGES * min(3, EDGE_PASSAGES) * 16 ** 2   # G d_h = 2 x 8


def test_every_shape_builds_on_the_meta_device():
    for name, (kind, dtype, _) in SHAPES.items():
        config = config_of(name)
        assert config.model_type == kind
        f = footprint(config, 1, 8)
        assert f["weight_bytes"] == f["parameters"] * dtype.itemsize
    assert footprint(config_of("gpt2-xl"), 1, 8)["layers"] == 48


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="name must be one of"):
        config_of("gpt3")
    with pytest.raises(ValueError, match="B"):
        footprint(config_of("gpt2"), 0, 8)
    with pytest.raises(ValueError, match="n"):
        footprint(config_of("gpt2"), 1, 0)
