"""The model zoo's file handling: chunked GGUF assembly, checksums, torn files, clear errors."""

import pytest

from connlap_lite import models
from conftest import fake_chunked


@pytest.fixture
def fake_chunks(tmp_path, monkeypatch):
    data = [b"GGUF" + bytes(range(200)), bytes(range(100, 250)) * 3]
    return fake_chunked(tmp_path, monkeypatch, "fakepart", "data/part{k:02d}.bin", data)


def test_assemble_joins_and_checks(fake_chunks):
    spec, whole, cache = fake_chunks
    path = models.assemble(spec, "fake", folder=cache)
    assert path.read_bytes() == whole
    assert not list(cache.glob("*.part-*"))          # no temporary file left behind


def test_torn_file_is_rebuilt_not_loaded(fake_chunks):
    spec, whole, cache = fake_chunks
    path = models.assemble(spec, "fake", folder=cache)
    path.write_bytes(whole[:50])                      # a torn copy
    assert models.assemble(spec, "fake", folder=cache).read_bytes() == whole
    path.write_bytes(b"X" * len(whole))               # right size, wrong bytes
    assert models.assemble(spec, "fake", folder=cache).read_bytes() == whole


def test_bad_chunks_are_refused(fake_chunks):
    spec, whole, cache = fake_chunks
    bad = models.Chunked(spec.module, spec.chunk, 2, spec.size, "0" * 64, "bad.gguf")
    with pytest.raises(OSError, match="expected"):
        models.assemble(bad, "fake", folder=cache)
    assert not (cache / "bad.gguf").exists()
    missing = models.Chunked("nosuchpkg{k}", spec.chunk, 2, spec.size, spec.sha256, "m.gguf")
    with pytest.raises(ModuleNotFoundError, match="make install"):
        models.assemble(missing, "fake", folder=cache)


def test_torn_converted_copy_is_removed(tmp_path):
    target = tmp_path / "conv"
    target.mkdir()
    (target / "model.safetensors").write_bytes(b"\x10\x00\x00\x00garbage")
    (target / "complete").write_text("x")
    assert models._readable(target) is False
    assert not target.exists()


def test_unknown_name_error_names_the_offline_models(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="Offline short names: minilm-l6, smollm2-135m"):
        models.load_model("surely-not-a-model-id")
    with pytest.raises(TypeError, match="name must be"):
        models.load_model("")


def test_fresh_model_draws_every_weight():
    """Torch's default draws are skipped only where the model's own initialisation writes every weight."""
    import torch
    from transformers import AutoModel, BertConfig

    from connlap_lite.nulls import fresh_model

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
