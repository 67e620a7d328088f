"""E3 on a ladder: one family's sizes measured alike, one model in memory at a time, and E3's model-level verdict.

``connlap ladder ID ID ID ...`` (hub ids or local folders of one family, smallest first) runs
:func:`measure_ladder`: every model through :func:`connlap_lite.measure.analysis.analyze` on the same passages, settings
and nulls, in its own precision (a checkpoint shipped in half precision is loaded so; every metric is computed in
float32 or float64), each report cached as it is measured, so a ladder that stops part-way resumes where it
stopped.  Then :func:`verdicts` applies E3's rule in force (:func:`connlap_lite.verdicts.rules.e3`) to each claim metric,
:func:`slope_power` says what power that many sizes give, and :func:`figure` draws each metric's gap against size.

``check_ladder(models)``     the models checked before anything is measured: at least two, no repeats, every
                             folder present with its config, one family, smallest first (where the configs say);
``measure_ladder(models)``   the reports, smallest first;
``verdicts(reports)``        ``{metric: E3 row}``;
``slope_power(k, snr)``      the power of a model-level slope test with ``k`` sizes;
``PYTHIA``, ``pythia_config``  the Pythia ladder's published shapes (70M to 12B), for :mod:`connlap_lite.models.footprint`.

Chapters: *E3*, *E3 on a ladder*.
"""
from __future__ import annotations

import gc
import json
import math
from pathlib import Path

import numpy as np

from ..verdicts.record import Report

# E3's claim metrics (smaller = more of the claim), as the chapter E3 reads them
METRICS = ("tv_norm_nosink", "spec_nosink", "cross_nosink", "head_defect", "head_defect_gain", "data_defect_nosink",
           "edge_defect")
SNR = 5.4        # the signal-to-noise ratio at which slope_power is quoted: the slope over the ladder's span
                 # of log10 size, in units of the between-model spread of the gap

# Pythia's published shapes (Biderman et al. 2023): hidden size, layers, heads; all GPT-NeoX, float16 checkpoints,
# one data order for every size
PYTHIA = {"EleutherAI/pythia-70m": (512, 6, 8), "EleutherAI/pythia-160m": (768, 12, 12),
          "EleutherAI/pythia-410m": (1024, 24, 16), "EleutherAI/pythia-1b": (2048, 16, 8),
          "EleutherAI/pythia-1.4b": (2048, 24, 16), "EleutherAI/pythia-2.8b": (2560, 32, 32),
          "EleutherAI/pythia-6.9b": (4096, 32, 32), "EleutherAI/pythia-12b": (5120, 36, 40)}


def pythia_config(name: str):
    """The Hugging Face config of a Pythia size (no download), in its checkpoints' float16.

    >>> c = pythia_config("EleutherAI/pythia-410m"); (c.hidden_size, c.num_hidden_layers, c.num_attention_heads)
    (1024, 24, 16)
    """
    if name not in PYTHIA:
        raise ValueError(f"name must be one of {', '.join(PYTHIA)}, got {name!r}")
    import torch
    from transformers import GPTNeoXConfig

    d, layers, heads = PYTHIA[name]
    return GPTNeoXConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                         intermediate_size=4 * d, vocab_size=50304, max_position_embeddings=2048, rotary_pct=0.25,
                         use_parallel_residual=True, dtype=torch.float16)


def _config(name: str):
    """``name``'s config where it can be read without weights (a folder's config.json, a Pythia size, a hub id in
    the local cache); None where it cannot (an offline short name, a hub id not cached here)."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(str(folder))
    if name in PYTHIA:
        return pythia_config(name)
    from ..models.offline import OFFLINE

    if name in OFFLINE:
        return None
    try:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(name)
    except Exception:                   # no network, not cached: the report's own facts are checked after
        return None


def _parameters(config) -> int:
    """Every parameter of ``config``'s model, counted on the meta device (no memory)."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    from ..models.adapters.linear import is_encoder

    auto = AutoModel if is_encoder(config) else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(config)
    return sum(p.numel() for p in model.parameters())


def check_ladder(models) -> list:
    """``models`` checked before anything is measured; the configs read (None where none could be).

    Errors name the argument and the fix: fewer than two models, a repeated model, a path that looks like a
    folder but is missing or has no ``config.json``, two families, sizes not smallest first.

    >>> check_ladder(["EleutherAI/pythia-160m", "EleutherAI/pythia-70m"])
    Traceback (most recent call last):
    ...
    ValueError: models must be given smallest first: EleutherAI/pythia-160m (162,322,944 parameters) comes before EleutherAI/pythia-70m (70,426,624); reorder them
    """
    if isinstance(models, (str, bytes)) or not hasattr(models, "__iter__"):
        raise TypeError(f"models must be a list of model ids or folders, got {models!r}")
    models = [str(m) for m in models]
    if len(models) < 2:
        raise ValueError(f"models must name at least two sizes of one family (three or more for a verdict), got "
                         f"{models}: a ladder of one model has no slope; add the family's other sizes")
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise ValueError(f"models must not repeat a model, got {repeated[0]!r} twice; give each size once")
    for m in models:
        path = Path(m).expanduser()
        looks_local = m.startswith((".", "/", "~")) or path.exists() or m.count("/") > 1
        if looks_local and not path.is_dir():
            raise ValueError(f"models: the folder {m} does not exist; give the path of a saved model "
                             "(save_pretrained) or a hub id such as EleutherAI/pythia-70m")
        if path.is_dir() and not (path / "config.json").is_file():
            raise ValueError(f"models: the folder {m} has no config.json; save the model there with "
                             "model.save_pretrained(folder) (and its tokenizer with tokenizer.save_pretrained)")
    configs = [_config(m) for m in models]
    families = {m: c.model_type for m, c in zip(models, configs) if c is not None}
    if len(set(families.values())) > 1:
        listed = ", ".join(f"{m} ({f})" for m, f in families.items())
        raise ValueError(f"models must be sizes of one family, got {listed}; a ladder compares sizes within one "
                         "design (architecture is not scale): run one ladder per family")
    sizes = [(m, _parameters(c)) for m, c in zip(models, configs) if c is not None]
    for (a, x), (b, y) in zip(sizes, sizes[1:]):
        if y < x:
            raise ValueError(f"models must be given smallest first: {a} ({x:,} parameters) comes before {b} "
                             f"({y:,}); reorder them")
    return configs


def measure_ladder(models, *, n_passages: int = 16, n_tokens: int = 128, seed: int = 0,
                   random_seeds=(0, 1, 2, 3, 4), device: str = "cpu", cache: bool = True, refresh: bool = False,
                   progress: bool = False, log=None) -> list[Report]:
    """Every model of the ladder measured by :func:`connlap_lite.measure.analysis.analyze` on the same passages, settings
    and nulls, one in memory at a time (each report cached as it is measured: a ladder run again resumes from the
    cache).  ``log`` (a function of one string), if given, hears each model's start and time."""
    import time

    import torch

    from .analysis import analyze

    check_ladder(models)
    reports = []
    for i, name in enumerate(models):
        start = time.perf_counter()
        report = analyze(str(name), n_passages=n_passages, n_tokens=n_tokens, seed=seed, random_seeds=random_seeds,
                         device=device, cache=cache, refresh=refresh, progress=progress)
        reports.append(report)
        gc.collect()                                  # the model is gone with analyze's frame: free its memory now
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        if log is not None:
            log(f"[{i + 1}/{len(models)}] {name}: {report['non_embedding_parameters']:,} non-embedding parameters, "
                f"{time.perf_counter() - start:.1f} s")
    families = {r["family"] for r in reports}
    if len(families) > 1:
        raise ValueError(f"models must be sizes of one family, got {sorted(families)} from their weights; run one "
                         "ladder per family")
    x = [r["non_embedding_parameters"] for r in reports]
    if x != sorted(x):
        raise ValueError(f"models must be given smallest first; their non-embedding parameters are {x}: reorder them")
    return reports


def verdicts(reports, metrics=METRICS) -> dict:
    """E3's rule in force (:func:`connlap_lite.verdicts.rules.e3`) on each of ``metrics`` the reports hold."""
    from ..verdicts.rules import e3

    return {m: e3(reports, m) for m in metrics if all(m in r["conditions"]["trained"] for r in reports)}


def slope_power(k: int, snr: float = SNR, alpha: float = 0.05) -> float:
    """The power of a two-sided test of a least-squares slope over ``k`` sizes evenly spaced in log size, at ``alpha``,
    when the slope over the ladder's span is ``snr`` times the between-model spread: Student's t with ``k - 2``
    degrees of freedom and noncentrality ``snr sqrt(k (k + 1) / (12 (k - 1)))``.  Two sizes: no test (0).

    >>> [round(slope_power(k), 2) for k in (2, 3, 5, 8)]
    [0.0, 0.24, 0.8, 0.98]
    """
    from scipy.stats import nct, t as student

    if k < 3:
        return 0.0
    ncp = snr * math.sqrt(k * (k + 1) / (12 * (k - 1)))
    q = float(student.ppf(1 - alpha / 2, k - 2))
    return float(nct.sf(q, k - 2, ncp) + nct.cdf(-q, k - 2, ncp))


def summary(rows: dict, k: int) -> list[str]:
    """The lines the command prints: each metric's verdict and slope, then the power of ``k`` sizes."""
    out = []
    for metric, row in rows.items():
        slopes = "; ".join(f"{f}: slope {w['slope']:+.4f} per decade" for f, w in row["within"].items())
        out.append(f"E3 {metric:<20} {row['verdict']:<15} {slopes or 'fewer than three sizes: no slope tested'}")
    out.append(f"{k} sizes: a model-level slope test has power {slope_power(k):.2f} at a signal-to-noise ratio of "
               f"{SNR} (3 sizes {slope_power(3):.2f}, 5 sizes {slope_power(5):.2f}, 8 sizes {slope_power(8):.2f})")
    return out


def figure(reports, rows: dict):
    """Each metric's late-layer gap (trained minus its strongest null) against log10 non-embedding parameters."""
    import matplotlib.pyplot as plt

    from ..verdicts.rules import gap

    metrics = list(rows)
    cols = min(3, max(1, len(metrics)))
    fig, axes = plt.subplots(math.ceil(len(metrics) / cols), cols, figsize=(3.4 * cols, 2.6 * math.ceil(len(metrics) / cols)),
                             squeeze=False)
    x = np.log10([r["non_embedding_parameters"] for r in reports])
    for ax, metric in zip(axes.flat, metrics):
        y = [float(np.mean(gap(r, metric))) for r in reports]
        ax.plot(x, y, "o-", color="C0")
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_title(f"{metric}: {rows[metric]['verdict']}", fontsize=9)
        ax.set_xlabel("log10 non-embedding parameters", fontsize=9)
        ax.set_ylabel("gap to strongest null", fontsize=9)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def write(reports, rows: dict, folder: Path) -> list[Path]:
    """The reports (``<i>-<name>.json``), the verdicts (``e3.json``) and the figure (``e3_ladder.png``) into
    ``folder``."""
    import matplotlib.pyplot as plt

    from .._files import atomic_write_text

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for i, r in enumerate(reports):
        path = folder / f"{i}-{Path(r['model']).name or 'model'}.json"
        atomic_write_text(path, json.dumps(r.to_dict() if isinstance(r, Report) else r, indent=1))
        written.append(path)
    path = folder / "e3.json"
    atomic_write_text(path, json.dumps(rows, indent=1, default=float))
    written.append(path)
    fig = figure(reports, rows)
    fig.savefig(folder / "e3_ladder.png", dpi=110)
    plt.close(fig)
    written.append(folder / "e3_ladder.png")
    return written


# ------------------------------------------------------------------ the tiny offline ladder (tests, the chapter)
TINY_WIDTHS = (32, 48, 64, 96)      # hidden sizes of the tiny GPT-NeoX ladder; heads of width 8


def plant_isometry(model, strength: float) -> None:
    """Move every head transport ``T_h = W_O^h W_V^h`` of a GPT-NeoX ``model`` towards a scaled partial isometry, in
    place: its singular values ``s`` become ``s^(1 - strength)`` (rescaled to keep ``||T_h||_F``), through ``W_V^h``
    alone (``W_V^h <- W_O^{h+} U S' V^T``).  ``strength`` 0 changes nothing, 1 makes every head an isometry: the
    planted effect of the tiny ladder (the head defect falls with it)."""
    import torch

    if not 0 <= strength <= 1:
        raise ValueError(f"strength must be in [0, 1], got {strength!r}")
    H = model.config.num_attention_heads
    with torch.no_grad():
        for layer in model.gpt_neox.layers:
            a = layer.attention
            d = a.dense.weight.shape[0]
            dh = d // H
            qkv = a.query_key_value.weight.view(H, 3, dh, d)
            for h in range(H):
                W_o = a.dense.weight[:, h * dh:(h + 1) * dh].double()
                W_v = qkv[h, 2].double()
                U, s, Vt = torch.linalg.svd(W_o @ W_v, full_matrices=False)
                U, s, Vt = U[:, :dh], s[:dh], Vt[:dh]
                flat = s.pow(1 - strength)
                flat = flat * s.norm() / flat.norm()
                qkv[h, 2] = (torch.linalg.pinv(W_o) @ (U * flat) @ Vt).to(qkv.dtype)


def byte_tokenizer():
    """A byte-level tokenizer made here: each of the 256 bytes is a token, and ``<|endoftext|>`` is the padding
    and end-of-text token (put by no text: like GPT-NeoX's, it adds no special token). The tiny ladders' models
    read it, so that they need neither a download nor an offline model's package (on Colab, the package and
    transformers are enough).

    >>> tok = byte_tokenizer()
    >>> len(tok), len(tok("walk")["input_ids"]), len(tok("día")["input_ids"]), tok.decode(tok("día")["input_ids"])
    (257, 4, 4, 'día')
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<|endoftext|>"] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def tiny_ladder(folder, *, seed: int = 0, planted: float = 0.0, widths=TINY_WIDTHS, layers: int = 2) -> list[str]:
    """A ladder of tiny random GPT-NeoX models of growing width saved as folders under ``folder`` (with
    :func:`byte_tokenizer`, so that no model package is needed), smallest first; with ``planted`` > 0 the ``i``-th of ``k`` sizes has its heads
    moved towards isometries by ``planted * i / (k - 1)`` (:func:`plant_isometry`): E3's claim, planted.  Returns
    the folders' paths."""
    import torch
    from transformers import AutoModelForCausalLM, GPTNeoXConfig

    tok = byte_tokenizer()
    out = []
    for i, d in enumerate(widths):
        torch.manual_seed(seed * 1000 + i)
        config = GPTNeoXConfig(num_hidden_layers=layers, num_attention_heads=d // 8, hidden_size=d,
                               intermediate_size=2 * d, vocab_size=len(tok), max_position_embeddings=64,
                               rotary_pct=0.25, use_parallel_residual=True, pad_token_id=tok.pad_token_id)
        model = AutoModelForCausalLM.from_config(config).eval()
        if planted:
            plant_isometry(model, planted * i / (len(widths) - 1))
        path = Path(folder) / f"neox-{d}"
        model.save_pretrained(path)
        tok.save_pretrained(path)
        out.append(str(path))
    return out
