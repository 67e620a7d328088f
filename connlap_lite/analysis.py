"""Measure E1-E3 on a model against its nulls: the one function the chapters and the CLI call.

``analyze(name)`` loads a model, builds its nulls (the same architecture at random
initialisation, five seeds; the trained model on shuffled passages), streams every layer,
and returns per-layer, per-passage values of every metric in :mod:`connlap_lite.metrics`.
Besides these whole-model conditions, the trained condition carries the nulls that live inside
one measurement, registered before any result was read (their names are the report's keys):

``cross_passage_tv_norm_nosink``  passage b at layer l against passage b + 1 at layer l + 1;
``positional_tv_norm_nosink``     passage b at layer l against the mean walk of the other passages
                                  at layer l + 1 (a positional-only operator);
``sep<k>_tv_norm_nosink``         passage b at layer l against itself at layer l + k (k = 2..4),
                                  the layer-separation profile (k = 1 is ``tv_norm_nosink``);
``data_defect_cross``             the random-init twin's head transports (seed ``random_seeds[0]``)
                                  on the trained model's own inputs, sink tokens left out;
``data_defect_gaussian``          Gaussian transports of the same shapes on the same inputs.

``data_defect_nosink`` is the trained model's data defect on the same tokens, the one to set
against those two.  Reading the report (curves, trends, verdicts) is :mod:`connlap_lite.report`'s job.
Results are cached as JSON, keyed by the model name, the arguments, the metrics' ``SCHEMA``
(bumped whenever a metric's definition changes), a digest of the corpus's text (the package's
corpora, :func:`connlap_lite.text.corpus_digest`) and, for a local folder, the identity of its files, so the chapters that
share a measurement compute it once.  A cached report that cannot be read or does not have the
expected shape is recomputed (with a warning) and overwritten.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import hashlib
import json
import time
import warnings
from pathlib import Path

import torch

from . import metrics as M
from .nulls import quantise_q4, random_like, shuffled   # (the whole-model nulls; importable from here too)
from ._backend import check_int
from ._files import atomic_write_text, locked, read_json, sweep
from .adapters import describe
from .extraction import attention_walks, head_transports, max_positions
from .models import OFFLINE, cache_dir, load_model
from .verify import check as verify_check
from .text import check_bos, check_corpus, check_texts, corpus_digest
from .text import corpus as corpus_texts
from .text import passages as make_passages

EDGES = 4            # heaviest non-sink edges per passage for the edge-transport defect
EDGE_PASSAGES = 4    # passages whose edges are measured
WALK_METRICS = ["sink", "uniform_dist", "rev", "rev_nosink", "cross", "cross_nosink"]
STEP_METRICS = ["tv", "tv_norm", "spec", "tv_nosink", "tv_norm_nosink", "spec_nosink",
                "cross_passage_tv_norm_nosink", "positional_tv_norm_nosink"]
SEPARATIONS = (2, 3, 4)   # layer l against l + k: sep<k>_tv_norm_nosink has layers - k per-layer lists
SEP_METRICS = [f"sep{k}_tv_norm_nosink" for k in SEPARATIONS]
HEAD_METRICS = ["head_defect", "head_defect_gain", "head_defect_rotation", "head_defect_gaussian", "copy", "overlap"]
DATA_METRICS = ["data_defect", "edge_defect", "data_defect_nosink", "data_defect_cross", "data_defect_gaussian"]
# metrics with one value per passage in each per-layer list (the rest: per head, or per measured edge passage)
PASSAGE_METRICS = WALK_METRICS + STEP_METRICS + SEP_METRICS + ["data_defect", "data_defect_nosink",
                                                              "data_defect_cross", "data_defect_gaussian"]


def separation(metric: str) -> int:
    """How many layers apart a metric's two walks are: 0 per layer, 1 for a step, k for ``sep<k>_...``."""
    if metric in STEP_METRICS:
        return 1
    if metric in SEP_METRICS:
        return int(metric[3:metric.index("_")])
    return 0


def parameter_counts(model) -> tuple[int, int]:
    """All parameters, and those outside the token and position embeddings and the LM head."""
    total = sum(p.numel() for p in model.parameters())
    skip = {id(model.get_input_embeddings().weight)}
    out = getattr(model, "lm_head", None)
    if out is not None:
        skip.add(id(out.weight))
    for name, p in model.named_parameters():
        if "position_embeddings" in name or name.endswith("wpe.weight"):
            skip.add(id(p))
    return total, total - sum(p.numel() for p in model.parameters() if id(p) in skip)


def _walk_metrics(P: torch.Tensor, sinks: list[int], spectra: list | None = None) -> dict:
    """Per-passage walk metrics of one layer; ``P`` is ``(B, n, n)`` float64.  The symmetrised spectra of
    ``P`` and of ``P`` without sinks are appended to ``spectra`` if given (the step metrics reuse them)."""
    causal = bool((P.triu(1) == 0).all())
    B, n, _ = P.shape
    Pn = M.without_sinks(P, sinks)
    U = M.uniform_walk(n, causal, dtype=P.dtype)
    out = {"sink": M.sink_mass(P, sinks), "uniform_dist": M.walk_distance(P, U),
           "rev": M.reversibility(M.teleport(P)), "rev_nosink": M.reversibility(M.teleport(Pn))}
    for key, W in (("cross", P), ("cross_nosink", Pn)):
        spec = M.sym_spectrum(W)
        if spectra is not None:
            spectra.append(spec)
        pair = (spec[:, None, :] - spec[None, :, :]).abs().mean(-1)
        # each passage's mean distance to the others; with one passage there are no others
        out[key] = pair.sum(1) / (B - 1) if B > 1 else torch.full((B,), float("nan"), dtype=P.dtype)
    return out


def _step_metrics(P: torch.Tensor, Q: torch.Tensor, sinks: list[int], causal: bool, spectra_P: list | None = None,
                  spectra_Q: list | None = None) -> dict:
    """Step metrics from layer ``P`` to layer ``Q``; the spectral distances from the spectra ``_walk_metrics``
    returned for each where given (the same numbers as ``M.spectral_distance``, without solving them again)."""
    Pn, Qn = M.without_sinks(P, sinks), M.without_sinks(Q, sinks)
    if spectra_P and spectra_Q:
        spec, spec_nosink = ((a - b).abs().mean(-1) for a, b in zip(spectra_P, spectra_Q))
    else:
        spec, spec_nosink = M.spectral_distance(P, Q), M.spectral_distance(Pn, Qn)
    out = {"tv": M.walk_distance(P, Q), "tv_norm": M.normalised_walk_distance(P, Q, causal),
           "spec": spec, "tv_nosink": M.walk_distance(Pn, Qn),
           "tv_norm_nosink": M.normalised_walk_distance(Pn, Qn, causal, sinks), "spec_nosink": spec_nosink}
    B = P.shape[0]
    if B > 1:
        # the same distance to another passage's next layer, and to the other passages' mean next layer
        out["cross_passage_tv_norm_nosink"] = M.normalised_walk_distance(Pn, Qn.roll(-1, 0), causal, sinks)
        others = (Qn.sum(0, keepdim=True) - Qn) / (B - 1)
        out["positional_tv_norm_nosink"] = M.normalised_walk_distance(Pn, others, causal, sinks)
    return out


def _data_defects(heads, X: torch.Tensor, keep: list[int], twin, seed: int) -> tuple[dict, "M.HeadTransports"]:
    """The data defect on the non-sink tokens ``keep``: the trained heads', and two nulls' on the same inputs; and
    the Gaussian null's heads (drawn last, with ``seed``, so that they are alive beside nothing else of this size;
    ``measure`` reuses them for ``head_defect_gaussian``)."""
    Xk = X[:, keep]
    out = {"data_defect_nosink": M.data_isometry_defect(heads, Xk).mean(-1)}
    if twin is not None:
        out["data_defect_cross"] = M.data_isometry_defect(twin, Xk).mean(-1)
    gaussian = M.gaussian_null(heads, seed)
    out["data_defect_gaussian"] = M.data_isometry_defect(gaussian, Xk).mean(-1)
    return out, gaussian


def _edge_defects(lw, walks: torch.Tensor, sinks: list[int]) -> torch.Tensor:
    """Rank-free defect of the heaviest non-sink, off-diagonal edge transports, per passage (``walks``: the
    layer's float64 head-mean walks); every edge of the measured passages in one :func:`metrics.edge_defects` call."""
    k, n = min(EDGE_PASSAGES, walks.shape[0]), walks.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool, device=walks.device)
    mask.fill_diagonal_(False)
    mask[:, sinks] = False
    mask[sinks, :] = False
    top = torch.where(mask, walks[:k], torch.zeros((), dtype=walks.dtype)).flatten(1).topk(EDGES).indices
    return M.edge_defects(lw.attention[:k], lw.transports, top // n, top % n).mean(-1)


def measure(model, batch: dict, *, encoder: bool, head_nulls: bool = True, twin=None,
            progress: bool = False) -> dict:
    """Every metric for every layer of ``model`` on ``batch``: ``{metric: [per-layer values]}``.

    Walk and data metrics are lists of per-passage values; head metrics are per-head values.
    ``head_nulls`` adds the nulls measured inside the model (rotated and Gaussian heads, Gaussian
    transports on the data); ``twin`` (a model of the same architecture, e.g. ``random_like``) adds
    ``data_defect_cross``, its transports on this model's inputs.
    """
    if not isinstance(batch, dict) or "input_ids" not in batch:
        raise TypeError("batch must be a dict with 'input_ids' (and 'attention_mask'), e.g. from "
                        "connlap_lite.passages")
    mask = batch.get("attention_mask")
    if mask is not None and not bool(torch.as_tensor(mask).bool().all()):
        rows = torch.nonzero(~torch.as_tensor(mask).bool().all(1)).flatten().tolist()
        raise ValueError(f"batch has padding tokens (attention_mask 0) in passages {rows[:5]}: measure needs "
                         "passages of equal length without padding, as connlap_lite.passages makes; measure "
                         "unequal texts one at a time")
    causal = not describe(model)["encoder"]
    if bool(encoder) == causal:
        raise ValueError(f"encoder={encoder} but {type(model).__name__} is {'causal' if causal else 'bidirectional'}; "
                         f"pass encoder={not causal} (its sink tokens depend on it)")
    if twin is not None and type(twin) is not type(model):
        raise TypeError(f"twin must be a model of the same architecture as model ({type(model).__name__}), "
                        f"got {type(twin).__name__}; build it with random_like(model, seed)")
    res: dict[str, list] = {k: [] for k in WALK_METRICS + STEP_METRICS + SEP_METRICS + HEAD_METRICS + DATA_METRICS}
    previous: list[torch.Tensor] = []                               # the last max(SEPARATIONS) layers' walks
    previous_spectra: list = []
    n = batch["input_ids"].shape[1]
    sinks = M.sink_columns(n, encoder)
    keep = [i for i in range(n) if i not in sinks]
    for lw in attention_walks(model, batch, progress=progress):
        A = lw.attention
        P = A[:, 0].double()                                       # (B, n, n): the layer's walks, the head mean
        for h in range(1, A.shape[1]):                             # summed head by head: no float64 copy of A
            P += A[:, h]
        P /= A.shape[1]
        spectra: list = []
        for k, v in _walk_metrics(P, sinks, spectra).items():
            res[k].append(v.tolist())
        if previous:
            for k, v in _step_metrics(previous[-1], P, sinks, not encoder, previous_spectra, spectra).items():
                res[k].append(v.tolist())
        previous_spectra = spectra
        for k in SEPARATIONS:
            if len(previous) >= k:
                Pn, Qn = M.without_sinks(previous[-k], sinks), M.without_sinks(P, sinks)
                res[f"sep{k}_tv_norm_nosink"].append(M.normalised_walk_distance(Pn, Qn, not encoder, sinks).tolist())
        previous = (previous + [P])[-max(SEPARATIONS):]
        heads = lw.transports
        gain = lw.gain
        res["head_defect"].append(M.scaled_isometry_defect(heads).tolist())
        res["head_defect_gain"].append(M.scaled_isometry_defect(M.fold_gain(heads, gain)).tolist())
        if head_nulls:
            res["head_defect_rotation"].append(M.scaled_isometry_defect(M.rotation_null(heads, lw.layer)).tolist())
        res["copy"].append(M.copy_score(heads).tolist())
        res["overlap"].append(M.read_write_overlap(heads).tolist())
        X = lw.inputs.double()
        res["data_defect"].append(M.data_isometry_defect(heads, X).mean(-1).tolist())
        if head_nulls:
            other = None if twin is None else head_transports(twin, lw.layer).to(dtype=heads.U.dtype)
            values, gaussian = _data_defects(heads, X, keep, other, lw.layer)
            for k, v in values.items():
                res[k].append(v.tolist())
            # the same Gaussian heads (one draw for E2's two Gaussian nulls), their QR factors already cached
            res["head_defect_gaussian"].append(M.scaled_isometry_defect(gaussian).tolist())
            del gaussian
        res["edge_defect"].append(_edge_defects(lw, P, sinks).tolist())
    return {k: v for k, v in res.items() if v}


# Bump whenever a metric's definition (not merely its speed) changes: cached reports carry it.
SCHEMA = "2026-12-01.3"


def _key(name: str, **kw) -> str:
    blob = json.dumps({"name": name, "schema": SCHEMA, **kw}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _folder_identity(name: str) -> str | None:
    """For a local folder, a digest of its files' names, sizes and modification times; else None.

    The offline short names pin their packages' versions in the name of their files (and hashes
    in :mod:`connlap_lite.models`), so their key is left as it was.
    """
    if name in OFFLINE or not Path(name).expanduser().is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(Path(name).expanduser().rglob("*")):
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(Path(name).expanduser()).parts):
            st = f.stat()
            h.update(f"{f.relative_to(Path(name).expanduser())}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _report_problem(report, name: str, args: dict) -> str | None:
    """Why a cached report cannot be used (None if it can): its shape is checked, not trusted."""
    if not isinstance(report, dict):
        return f"it holds a {type(report).__name__}, not a report"
    if report.get("schema") != SCHEMA:
        return f"its schema is {report.get('schema')!r}, not {SCHEMA!r}"
    if report.get("model") != name:
        return f"it is a report on {report.get('model')!r}"
    layers, conditions = report.get("layers"), report.get("conditions")
    if not isinstance(layers, int) or layers < 1 or not isinstance(conditions, dict):
        return "it has no layer count or no conditions"
    want = ["random" if args["random_init"] else "trained"] + [f"random{s}" for s in args["random_seeds"]]
    want += ["shuffled"] if args["shuffle"] else []
    for cond in want:
        values = conditions.get(cond)
        if not isinstance(values, dict) or not values:
            return f"condition {cond!r} is missing"
        for metric, per_layer in values.items():
            expected = layers - separation(metric)
            if not isinstance(per_layer, list) or len(per_layer) != expected or \
                    not all(isinstance(v, list) and v for v in per_layer):
                return f"{cond}/{metric} does not hold {expected} per-layer lists"
    return None


def _cached(path: Path, name: str, args: dict) -> dict | None:
    """The cached report at ``path``, or None (absent, unreadable or malformed: a warning says which)."""
    report = read_json(path)
    if report is None:
        return None
    problem = _report_problem(report, name, args)
    if problem:
        warnings.warn(f"the cached measurement {path} is not usable ({problem}); recomputing it", stacklevel=3)
        return None
    return report


def _check_args(name, n_passages, n_tokens, seed, random_seeds, texts, device) -> tuple[list[int], list | None]:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a model short name, Hugging Face id or folder, got {name!r}")
    check_int(n_passages, "n_passages", low=2, why="bootstrap intervals and cross-passage distances need two")
    check_int(n_tokens, "n_tokens", low=4)
    check_int(seed, "seed", low=0)
    if isinstance(random_seeds, (str, bytes)) or not hasattr(random_seeds, "__iter__"):
        raise TypeError(f"random_seeds must be a sequence of ints such as (0, 1), got {random_seeds!r}")
    seeds = list(random_seeds)
    for s in seeds:
        check_int(s, "random_seeds entries", low=0)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"random_seeds must not repeat a seed, got {seeds}")
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda', got {device!r}")
    return seeds, None if texts is None else check_texts(texts)


def analyze(name: str, *, n_passages: int = 16, n_tokens: int = 128, seed: int = 0, random_seeds=(0, 1, 2, 3, 4),
            shuffle: bool = True, random_init: bool = False, q4: bool = False, texts: list[str] | None = None,
            corpus: str = "pydoc", bos: bool | None = None, device: str = "cpu", cache: bool = True,
            refresh: bool = False, progress: bool = False) -> dict:
    """Measure every E1/E2 metric on model ``name`` and on its nulls.

    Returns a JSON-able dict: model facts (family, encoder, layers, parameter counts) and
    ``conditions``: ``"trained"`` (or ``"random"`` with ``random_init``), ``"random<seed>"``
    for each of ``random_seeds``, and ``"shuffled"``, each ``{metric: per-layer values}``.

    ``corpus`` names the texts (:data:`connlap_lite.text.CORPORA`) unless ``texts`` are given.
    ``bos`` puts the beginning-of-sequence token first (True) or leaves it out (False) instead of
    following the tokenizer (None; see :func:`connlap_lite.passages`): the sink ablation of chapter *Scorecard*.
    ``cache`` reads and writes the measurement cache; ``refresh`` recomputes and overwrites
    the cached report.  A cached report that is unreadable or malformed is recomputed with a warning.

    Chapters: *E1*, *E2*, *E3*.
    """
    random_seeds, texts = _check_args(name, n_passages, n_tokens, seed, random_seeds, texts, device)
    if texts is None:
        check_corpus(corpus)
    else:
        corpus = "texts"
    check_bos(bos)
    args = dict(n_passages=n_passages, n_tokens=n_tokens, seed=seed, random_seeds=random_seeds,
                shuffle=shuffle, random_init=random_init, q4=q4, texts=texts, corpus=corpus,
                corpus_digest=corpus_digest(corpus) if texts is None else None)
    if bos is not None:                             # (absent when None: the tokenizer's habit, the key's default)
        args["bos"] = bos
    identity = _folder_identity(name)
    key = _key(name, **args) if identity is None else _key(name, weights=identity, **args)
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in name.strip("/"))[-80:]
    path = cache_dir() / "measurements" / f"{slug}-{key}.json"
    if cache and not refresh:
        report = _cached(path, name, args)
        if report is not None:
            return report
    start = time.perf_counter()
    model, tok = load_model(name, device=device, random_init=random_init, seed=seed)
    limit = max_positions(model)
    if limit is not None and n_tokens > limit:
        raise ValueError(f"n_tokens must be at most {limit} for {name!r} (its positions), got {n_tokens}")
    if q4:
        quantise_q4(model)
    batch = make_passages(tok, n_passages, n_tokens, seed=seed, texts=corpus_texts(corpus) if texts is None else texts,
                          bos=bos)
    # no number from a layer that the adapter misreads: the walk must reproduce every attention module first
    verify_check(model, {k: v[:2] for k, v in batch.items()})
    facts = describe(model)
    encoder = facts["encoder"]
    total, non_embedding = parameter_counts(model)
    report = {"schema": SCHEMA, "model": name, **facts, "parameters": total, "non_embedding_parameters": non_embedding,
              "passages": n_passages, "tokens": n_tokens, "seed": seed, "q4": q4, "corpus": corpus,
              "corpus_digest": args["corpus_digest"], "bos": bos, "conditions": {}}
    label = "random" if random_init else "trained"
    conditions = report["conditions"]
    twin = random_like(model, 1000 + random_seeds[0]) if random_seeds else None
    conditions[label] = measure(model, batch, encoder=encoder, twin=twin, progress=progress)
    nulls = {}
    for s in random_seeds:                          # the first null is the twin itself: built once
        null = twin if twin is not None else random_like(model, 1000 + s)
        twin = None
        nulls[f"random{s}"] = measure(null, batch, encoder=encoder, head_nulls=False, progress=progress)
        del null
    if shuffle:
        conditions["shuffled"] = measure(model, shuffled(batch, 1, seed), encoder=encoder, head_nulls=False,
                                         progress=progress)
    conditions.update(nulls)
    report["seconds"] = time.perf_counter() - start
    if cache or refresh:
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path.parent):                   # one lock for the folder: no lock file per report
            sweep(path, everything=True)
            atomic_write_text(path, json.dumps(report))
    return report

