"""connlap_lite.models.footprint: sizes from a configuration alone, against a model built for real."""
import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

from connlap_lite import _backend, attention_walks
from connlap_lite.measure import edges
from connlap_lite.models.adapters import describe
from connlap_lite.verdicts.record import EDGE_PASSAGES, EDGES
from connlap_lite.models.footprint import SHAPES, config_of, footprint


def test_footprint_counts_what_a_built_model_has(monkeypatch):
    config = LlamaConfig(hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
                         num_key_value_heads=2, vocab_size=100, dtype="bfloat16")
    model = AutoModelForCausalLM.from_config(config).eval()
    f = footprint(config, 3, 10)
    facts = describe(model)
    assert f["parameters"] == sum(p.numel() for p in model.parameters())
    assert f["weight_bytes"] == 2 * f["parameters"]                      # the config's bfloat16
    assert all(f[k] == facts[k] for k in ("layers", "heads", "groups", "d", "head_dim"))
    # the sizes are those of the arrays the measurement makes: the attention that attention_walks builds, the Gram
    # that gated_singular_values caches, the batch of edge cores it solves
    batch = {"input_ids": torch.randint(0, 100, (3, 10), generator=torch.Generator().manual_seed(0))}
    lw = next(attention_walks(model, batch, progress=False))
    assert f["attention_bytes"] == lw.attention.nbytes
    cores, real = [], _backend.eigvalsh

    def solve(core):
        cores.append(core.nbytes)
        return real(core)

    monkeypatch.setattr(edges, "eigvalsh", solve)
    m = EDGES * min(3, EDGE_PASSAGES)
    edges.gated_singular_values(torch.rand(m, 6, dtype=torch.float64), lw.transports, lw.transports.groups)
    gram = next(v[0] for k, v in lw.transports._cache.items() if k[0] == "gated-gram")
    assert f["head_bytes"] == gram.nbytes and cores == [f["edge_bytes"]]


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
