"""The model zoo's file handling: chunked GGUF assembly, checksums, torn files, clear errors."""

import re

import pytest

from connlap_lite.models import load as models, offline
from conftest import fake_chunked


@pytest.fixture
def fake_chunks(tmp_path, monkeypatch):
    data = [b"GGUF" + bytes(range(200)), bytes(range(100, 250)) * 3]
    return fake_chunked(tmp_path, monkeypatch, "fakepart", "data/part{k:02d}.bin", data)


def test_assemble_joins_and_checks(fake_chunks):
    spec, whole, cache = fake_chunks
    path = offline.assemble(spec, "fake", folder=cache)
    assert path.read_bytes() == whole
    assert not list(cache.glob("*.part-*"))          # no temporary file left behind


def test_torn_file_is_rebuilt_not_loaded(fake_chunks):
    spec, whole, cache = fake_chunks
    path = offline.assemble(spec, "fake", folder=cache)
    path.write_bytes(whole[:50])                      # a torn copy
    assert offline.assemble(spec, "fake", folder=cache).read_bytes() == whole
    path.write_bytes(b"X" * len(whole))               # right size, wrong bytes
    assert offline.assemble(spec, "fake", folder=cache).read_bytes() == whole


def test_bad_chunks_are_refused(fake_chunks):
    spec, whole, cache = fake_chunks
    bad = offline.Chunked(spec.module, spec.chunk, 2, spec.size, "0" * 64, "bad.gguf")
    with pytest.raises(OSError, match="expected"):
        offline.assemble(bad, "fake", folder=cache)
    assert not (cache / "bad.gguf").exists()
    missing = offline.Chunked("nosuchpkg{k}", spec.chunk, 2, spec.size, spec.sha256, "m.gguf")
    with pytest.raises(ModuleNotFoundError, match="make install"):
        offline.assemble(missing, "fake", folder=cache)


def test_torn_converted_copy_is_removed(tmp_path):
    target = tmp_path / "conv"
    target.mkdir()
    (target / "model.safetensors").write_bytes(b"\x10\x00\x00\x00garbage")
    (target / "complete").write_text("x")
    assert models._readable(target) is False
    assert not target.exists()


def test_unknown_name_error_names_the_offline_models(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match=re.escape(f"Offline short names: {', '.join(offline.OFFLINE)}")):
        models.load_model("surely-not-a-model-id")
    with pytest.raises(TypeError, match="name must be"):
        models.load_model("")


def test_fresh_model_draws_every_weight():
    """Torch's default draws are skipped only where the model's own initialisation writes every weight."""
    import torch
    from transformers import AutoModel, BertConfig

    from connlap_lite.models.twins import fresh_model

    class Plain:                                     # a model with no initialisation of its own
        @staticmethod
        def from_config(config, attn_implementation=None):
            return torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 2))

    plain = fresh_model(Plain, None, 0, "eager")
    torch.manual_seed(0)
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), Plain.from_config(None).parameters()))
    config = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16, vocab_size=13)
    bert = fresh_model(AutoModel, config, 1, "eager")
    assert all(bool(p.isfinite().all()) for p in bert.parameters())
    assert float(bert.encoder.layer[0].attention.self.query.weight.detach().std()) == pytest.approx(0.02, rel=0.6)


# ------------------------------------------------------------------ natural Python types, preconditions
def test_a_model_class_that_refuses_sdpa_is_built_with_eager():
    built = []

    def build(impl):
        built.append(impl)
        if impl == "sdpa":
            raise ValueError("XForCausalLM does not support an attention implementation through "
                             "torch.nn.functional.scaled_dot_product_attention yet")
        return impl
    assert models._without_sdpa_if_refused(build, "sdpa") == "eager" and built == ["sdpa", "eager"]
    with pytest.raises(ValueError, match="other"):                   # any other refusal is the caller's
        models._without_sdpa_if_refused(lambda impl: (_ for _ in ()).throw(ValueError("other")), "sdpa")


@pytest.mark.parametrize("given, want", [("float16", "float16"), ("torch.bfloat16", "bfloat16"), ("half", "float16"),
                                         ("auto", None), (None, None)])
def test_dtype_names_that_transformers_takes(given, want):
    import torch
    assert models._dtype(given) == (None if want is None else getattr(torch, want))


def test_path_names_numpy_seeds_and_dtype_strings_load(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    import numpy as np
    import torch
    sys.path.insert(0, str(Path(__file__).parents[1]))
    import tiny_models

    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    folder = tiny_models.make_folder(tmp_path / "m")
    model, tok = models.load_model(folder, dtype="float16")
    assert next(model.parameters()).dtype == torch.float16 and tok("a text")["input_ids"]
    a, _ = models.load_model(folder, random_init=True, seed=np.int64(3))
    b, _ = models.load_model(str(folder), random_init=True, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    from connlap_lite.measure.analysis import analyze
    report = analyze(folder, n_passages=2, n_tokens=8, random_seeds=(np.int64(0),), shuffle=False,
                     texts=["a walk on tokens. " * 20], cache=False)
    assert report["model"] == str(folder) and "random0" in report["conditions"]


def test_integer_likes_are_indices_and_floats_never():
    import numpy as np
    import torch

    from connlap_lite._backend import check_index, check_int, integer
    assert [integer(v) for v in (np.int32(2), np.uint8(1), torch.tensor(4), 5)] == [2, 1, 4, 5]
    assert [integer(v) for v in (2.0, np.float64(1), True, np.bool_(True), torch.tensor([1]), "3")] == [None] * 6
    assert check_index(np.int64(1), "layer", 2) == 1 and check_int(np.int16(7), "n", low=1) == 7
    with pytest.raises(TypeError, match="layer must be an int index"):
        check_index(np.float32(1), "layer", 2)
