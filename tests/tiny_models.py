"""Small model folders for the fault and bad-input suites: a two-layer Llama with the offline BERT tokenizer.

Built offline in seconds, saved with ``save_pretrained`` like any local folder, and registered as a
fake offline short name (``fake-tiny``) whose converted copy goes through the same locked, hashed
conversion as the GGUF models.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

WORKER = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import tiny_models
import time
import safetensors.torch
from connlap_lite import models
tiny_models.register(models, Path({folder!r}))
_save = safetensors.torch.save_model
def slow_save(*args, **kw):          # a conversion as slow as a real one, so that the processes overlap
    time.sleep(1.0)
    return _save(*args, **kw)
safetensors.torch.save_model = slow_save
sources = []
_source = models._source
models._source = lambda name: sources.append(name) or _source(name)
ready = {ready!r}
if ready:
    Path(ready).write_text("loading")
model, tok = models.load_model("fake-tiny")
print(json.dumps({{"sum": float(sum(p.detach().double().sum() for p in model.parameters())), "vocab": len(tok),
                  "converted": len(sources)}}))
"""


def make_folder(folder: Path, *, layers: int = 2, seed: int = 0) -> Path:
    """Save a tiny random Llama (``layers`` layers, hidden size 32) and a tokenizer into ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    from connlap_lite.models import _source

    tok = AutoTokenizer.from_pretrained(_source("minilm-l6")[0])
    torch.manual_seed(seed)
    config = LlamaConfig(num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                         intermediate_size=64, vocab_size=len(tok), max_position_embeddings=64,
                         pad_token_id=tok.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def register(models, folder: Path) -> None:
    """Make ``fake-tiny`` an offline short name whose source is ``folder`` (converted like a GGUF model)."""
    models.OFFLINE["fake-tiny"] = "fake-tiny==0"
    models._source = lambda name, _folder=str(folder): (_folder, {})


def worker_command(folder: Path, ready: Path | None = None) -> list[str]:
    """A Python command that loads ``fake-tiny`` from ``folder`` and prints as JSON its weights' sum and whether
    it converted the model itself; it writes ``ready`` (if given) just before it starts loading."""
    code = WORKER.format(tests=str(Path(__file__).parent), folder=str(folder), ready=str(ready or ""))
    return [sys.executable, "-c", code]


def parse(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def make_gpt_neox_folder(folder: Path, *, layers: int = 2, seed: int = 0) -> Path:
    """Save a tiny random GPT-NeoX (Pythia's layout: parallel residual, a quarter of each head rotary) and the
    offline BERT tokenizer into ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPTNeoXConfig

    from connlap_lite.models import _source

    tok = AutoTokenizer.from_pretrained(_source("minilm-l6")[0])
    torch.manual_seed(seed)
    config = GPTNeoXConfig(num_hidden_layers=layers, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                           vocab_size=len(tok), max_position_embeddings=64, rotary_pct=0.25,
                           use_parallel_residual=True, pad_token_id=tok.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
