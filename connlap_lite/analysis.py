"""Measure E1-E3 on a model against its nulls: the one function the chapters and the CLI call.

``analyze(name)`` loads a model, builds its nulls (the same architecture at random
initialisation, five seeds; the trained model on shuffled passages), streams every layer,
and returns per-layer, per-passage values of every metric in :mod:`connlap_lite.metrics`.
Besides these whole-model conditions, the trained condition carries the nulls that live inside
one measurement, registered before any result was read (their names are the report's keys):

``cross_passage_tv_norm_nosink``  passage b at layer l against passage b + 1 at layer l + 1;
``positional_tv_norm_nosink``     passage b at layer l against the mean walk of the other passages
                                  at layer l + 1 (a positional-only operator); both divided by the
                                  trained step's own distance from uniform (one yardstick), and both
                                  also with the sinks kept (``cross_passage_tv_norm``, ``positional_tv_norm``,
                                  the nulls of the sinks-kept ablation ``tv_norm``);
``sep<k>_tv_norm_nosink``         passage b at layer l against itself at layer l + k (k = 2..4),
                                  the layer-separation profile (k = 1 is ``tv_norm_nosink``);
``data_defect_cross``             the random-init twin's head transports (seed ``random_seeds[0]``)
                                  on the trained model's own inputs, sink tokens left out;
``data_defect_gaussian``          Gaussian transports of the same shapes on the same inputs.

``data_defect_nosink`` is the trained model's data defect on the same tokens, the one to set
against those two.  Every ``_nosink`` metric leaves out the sink columns found in the data (each
layer's columns that receive over ``metrics.SINK_MULTIPLE / n`` of the attention; a step leaves out
both layers'), listed per condition and layer in ``sink_columns``; ``input_dependence_nosink`` is a
registered descriptive measure: how far each passage's walk is from the other passages' mean walk at the
same layer, over its distance from uniform (0: the layer's walk is the same whatever the input).
The record's shape is :mod:`connlap_lite.record`'s; ``analyze`` returns a read-only
:class:`~connlap_lite.record.Report`.  Reading the report (curves, trends, verdicts) is :mod:`connlap_lite.report`'s job.
Results are cached as JSON, keyed by the model name, the arguments, the metrics' ``SCHEMA``
(bumped whenever a metric's definition changes), a digest of the corpus's text (the package's
corpora, :func:`connlap_lite.text.corpus_digest`) and, for a local folder, the identity of its files, so the chapters that
share a measurement compute it once.  A cached report that cannot be read or does not have the
expected shape is recomputed (with a warning) and overwritten; a cache that cannot be written is a
warning, and the report is returned (the pipeline of :mod:`connlap_lite._cache`, which
:func:`connlap_lite.known.known_results` shares).

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import time

import torch

from . import metrics as M
from . import record
from .edges import edge_defects
from .transports import HeadTransports
from .nulls import gaussian_null, quantise_q4, random_like, rotation_null, shuffled
from ._backend import check_int, undefined
from ._cache import cached, folder_identity
from .adapters import describe
from .extraction import attention_walks, head_transports, max_positions
from .models import check_model, load_model, model_name
from .verify import check as verify_check
from .text import check_bos, check_corpus, check_texts, corpus_digest
from .text import corpus as corpus_texts
from .text import passages as make_passages

EDGES = 4            # heaviest non-sink edges per passage for the edge-transport defect
EDGE_PASSAGES = 4    # passages whose edges are measured
# the record's shape (metric names, units, layer separations) is connlap_lite.record's: analyze writes by it


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
    ``P`` and of ``P`` without sinks are appended to ``spectra`` if given (the step metrics reuse them).

    ``input_dependence_nosink``: each passage's walk (sinks removed) against the mean walk of the other
    passages at the same layer, over its own distance from the uniform walk (0: every passage has the same
    walk, the layer ignores its input)."""
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
        out[key] = pair.sum(1) / (B - 1) if B > 1 else undefined(torch.full((B,), float("nan"), dtype=P.dtype),
                                                                  key, "a batch has one passage (no other to compare)")
    if B > 1:
        Un = M.without_sinks(U, sinks) if sinks else U
        others = (Pn.sum(0, keepdim=True) - Pn) / (B - 1)
        out["input_dependence_nosink"] = M.over_scale(M.walk_distance(Pn, others), M.walk_distance(Pn, Un))
    return out


def _step_metrics(P: torch.Tensor, Q: torch.Tensor, sinks: list[int], causal: bool, spectra_P: list | None = None,
                  spectra_Q: list | None = None) -> dict:
    """Step metrics from layer ``P`` to layer ``Q`` (``sinks``: both layers' sink columns); the spectral distances
    from the spectra ``_walk_metrics`` returned for each where given (the same numbers as ``M.spectral_distance``,
    without solving them again).

    The inner nulls put another passage's next layer (``cross_passage_...``) or the other passages' mean next
    layer (``positional_...``) in place of the passage's own, and are divided by the trained pair's own
    :func:`metrics.uniform_scale`: one yardstick for the step and its nulls."""
    Pn, Qn = M.without_sinks(P, sinks), M.without_sinks(Q, sinks)
    if spectra_P and spectra_Q:
        spec, spec_nosink = ((a - b).abs().mean(-1) for a, b in zip(spectra_P, spectra_Q))
    else:
        spec, spec_nosink = M.spectral_distance(P, Q), M.spectral_distance(Pn, Qn)
    scale, scale_nosink = M.uniform_scale(P, Q, causal), M.uniform_scale(Pn, Qn, causal, sinks)
    out = {"tv": M.walk_distance(P, Q), "tv_norm": M.over_scale(M.walk_distance(P, Q), scale),
           "spec": spec, "tv_nosink": M.walk_distance(Pn, Qn),
           "tv_norm_nosink": M.over_scale(M.walk_distance(Pn, Qn), scale_nosink), "spec_nosink": spec_nosink}
    B = P.shape[0]
    if B > 1:
        for tag, A, C, yardstick in (("", P, Q, scale), ("_nosink", Pn, Qn, scale_nosink)):
            others = (C.sum(0, keepdim=True) - C) / (B - 1)
            out["cross_passage_tv_norm" + tag] = M.cross_passage_distance(A, C, yardstick)
            out["positional_tv_norm" + tag] = M.over_scale(M.walk_distance(A, others), yardstick)
    return out


def _data_defects(heads, X: torch.Tensor, keep: list[int], twin, seed: int) -> tuple[dict, "HeadTransports"]:
    """The data defect on the non-sink tokens ``keep``: the trained heads', and two nulls' on the same inputs; and
    the Gaussian null's heads (drawn last, with ``seed``, so that they are alive beside nothing else of this size;
    ``measure`` reuses them for ``head_defect_gaussian``)."""
    Xk = X[:, keep]
    out = {"data_defect_nosink": M.data_isometry_defect(heads, Xk).mean(-1)}
    if twin is not None:
        out["data_defect_cross"] = M.data_isometry_defect(twin, Xk).mean(-1)
    gaussian = gaussian_null(heads, seed)
    out["data_defect_gaussian"] = M.data_isometry_defect(gaussian, Xk).mean(-1)
    return out, gaussian


def _edge_defects(lw, walks: torch.Tensor, sinks: list[int]) -> torch.Tensor:
    """Rank-free defect of the heaviest non-sink, off-diagonal edge transports, per passage (``walks``: the
    layer's float64 head-mean walks); every edge of the measured passages in one :func:`connlap_lite.edges.edge_defects` call."""
    k, n = min(EDGE_PASSAGES, walks.shape[0]), walks.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool, device=walks.device)
    mask.fill_diagonal_(False)
    mask[:, sinks] = False
    mask[sinks, :] = False
    top = torch.where(mask, walks[:k], torch.zeros((), dtype=walks.dtype)).flatten(1).topk(EDGES).indices
    return edge_defects(lw.attention[:k], lw.transports, top // n, top % n).mean(-1)


def measure(model, batch: dict, *, encoder: bool, head_nulls: bool = True, twin=None,
            progress: bool = False, sinks_found: list | None = None) -> dict:
    """Every metric for every layer of ``model`` on ``batch``: ``{metric: [per-layer values]}``.

    Walk and data metrics are lists of per-passage values; head metrics are per-head values.
    The sink columns are read from each layer's walks (:func:`metrics.detect_sinks`, over the passages),
    not assumed; a step between two layers leaves out both layers' sinks.  ``sinks_found``, if given, gets
    each layer's sink columns appended.
    ``head_nulls`` adds the nulls measured inside the model (rotated and Gaussian heads, Gaussian
    transports on the data); ``twin`` (a model of the same architecture, e.g. ``random_like``) adds
    ``data_defect_cross``, its transports on this model's inputs.
    """
    if not isinstance(batch, dict) or "input_ids" not in batch:
        raise TypeError("batch must be a dict with 'input_ids' (and 'attention_mask'), e.g. from "
                        "connlap_lite.passages")
    check_model(model, batch)
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
    res: dict[str, list] = {k: [] for k in (record.WALK_METRICS + record.STEP_METRICS + record.SEP_METRICS
                                           + record.HEAD_METRICS + record.DATA_METRICS)}
    previous: list[torch.Tensor] = []                               # the last max(record.SEPARATIONS) layers' walks
    previous_spectra: list = []
    n = batch["input_ids"].shape[1]
    found: list[list[int]] = []                                     # every layer's sink columns so far
    for lw in attention_walks(model, batch, progress=progress):
        A = lw.attention
        P = A[:, 0].double()                                       # (B, n, n): the layer's walks, the head mean
        for h in range(1, A.shape[1]):                             # summed head by head: no float64 copy of A
            P += A[:, h]
        P /= A.shape[1]
        sinks = M.detect_sinks(P)
        found.append(sinks)
        keep = [i for i in range(n) if i not in sinks]
        spectra: list = []
        for k, v in _walk_metrics(P, sinks, spectra).items():
            res[k].append(v.tolist())
        if previous:
            both = sorted(set(found[-2]) | set(sinks))
            same = both == sinks == found[-2]                          # (the spectra without sinks are reusable)
            for k, v in _step_metrics(previous[-1], P, both, not encoder, previous_spectra if same else None,
                                      spectra if same else None).items():
                res[k].append(v.tolist())
        previous_spectra = spectra
        for k in record.SEPARATIONS:
            if len(previous) >= k:
                both = sorted(set(found[-1 - k]) | set(sinks))
                Pn, Qn = M.without_sinks(previous[-k], both), M.without_sinks(P, both)
                res[f"sep{k}_tv_norm_nosink"].append(M.normalised_walk_distance(Pn, Qn, not encoder, both).tolist())
        previous = (previous + [P])[-max(record.SEPARATIONS):]
        heads = lw.transports
        gain = lw.gain
        res["head_defect"].append(M.scaled_isometry_defect(heads).tolist())
        res["head_defect_gain"].append(M.scaled_isometry_defect(M.fold_gain(heads, gain)).tolist())
        if head_nulls:
            res["head_defect_rotation"].append(M.scaled_isometry_defect(rotation_null(heads, lw.layer)).tolist())
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
    if sinks_found is not None:
        sinks_found.extend(found)
    return {k: v for k, v in res.items() if v}


# Bump whenever a metric's definition (not merely its speed) changes: cached reports carry it.
SCHEMA = "2026-12-01.5"   # .4: detected sinks, one yardstick for the inner nulls, input dependence; .5: passages within one text


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
            expected = layers - record.separation(metric)
            if not isinstance(per_layer, list) or len(per_layer) != expected or \
                    not all(isinstance(v, list) and v for v in per_layer):
                return f"{cond}/{metric} does not hold {expected} per-layer lists"
    return None


def _check_args(name, n_passages, n_tokens, seed, random_seeds, texts, device) -> tuple:
    """The arguments checked, as plain Python values (a path's string, numpy ints as ints: the key is JSON)."""
    name = model_name(name)
    n_passages = check_int(n_passages, "n_passages", low=2,
                           why="bootstrap intervals and cross-passage distances need two")
    n_tokens = check_int(n_tokens, "n_tokens", low=4)
    seed = check_int(seed, "seed", low=0)
    if isinstance(random_seeds, (str, bytes)) or not hasattr(random_seeds, "__iter__"):
        raise TypeError(f"random_seeds must be a sequence of ints such as (0, 1), got {random_seeds!r}")
    seeds = [check_int(s, "random_seeds entries", low=0) for s in random_seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"random_seeds must not repeat a seed, got {seeds}")
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda', got {device!r}")
    return name, n_passages, n_tokens, seed, seeds, None if texts is None else check_texts(texts)


def analyze(name: str, *, n_passages: int = 16, n_tokens: int = 128, seed: int = 0, random_seeds=(0, 1, 2, 3, 4),
            shuffle: bool = True, random_init: bool = False, q4: bool = False, texts: list[str] | None = None,
            corpus: str = "pydoc", bos: bool | None = None, device: str = "cpu", cache: bool = True,
            refresh: bool = False, progress: bool = False, known: bool = False) -> "record.Report":
    """Measure every E1/E2 metric on model ``name`` and on its nulls.

    Returns a :class:`connlap_lite.record.Report` (read-only, JSON-able, read like a dict): model facts
    (family, encoder, layers, parameter counts), ``sink_columns`` (each condition's detected sink columns,
    per layer) and ``conditions``: ``"trained"`` (or ``"random"`` with ``random_init``), ``"random<seed>"``
    for each of ``random_seeds``, and ``"shuffled"``, each ``{metric: per-layer values}``.

    ``corpus`` names the texts (:data:`connlap_lite.text.CORPORA`) unless ``texts`` are given.
    ``bos`` puts the beginning-of-sequence token first (True) or leaves it out (False) instead of
    following the tokenizer (None; see :func:`connlap_lite.passages`): the sink ablation of chapter *Scorecard*.
    ``cache`` reads and writes the measurement cache; ``refresh`` recomputes and overwrites
    the cached report.  A cached report that is unreadable or malformed is recomputed with a warning; a
    report that cannot be cached (a read-only or full disk) is returned, with a warning naming the path.
    ``known`` adds ``"known_results"``: :func:`connlap_lite.known.known_results` on the same model, seed and
    passage sizes, measured with the model and random-init null loaded here (not loaded twice).

    Chapters: *E1*, *E2*, *E3*.
    """
    name, n_passages, n_tokens, seed, random_seeds, texts = _check_args(name, n_passages, n_tokens, seed, random_seeds,
                                                                        texts, device)
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
    identity = folder_identity(name)
    fields = args if identity is None else {"weights": identity, **args}
    held = {}                                       # the loaded model and its twin, for the chapter *Known results*

    def compute() -> dict:
        return _measure_all(name, args, device=device, progress=progress, held=held if known else None)

    report = cached("measurements", name, SCHEMA, fields, lambda r: _report_problem(r, name, args), compute,
                    read=cache and not refresh, write=cache or refresh)
    if known:
        from .known.report import NULL_SEED, known_results
        load = None
        if "model" in held:                         # measured just now: the same model, and its twin if it is the
            model, tok, twin = held.pop("model"), held.pop("tokenizer"), held.pop("twin", None)   # known null

            def load():
                return model, tok, twin if twin is not None else random_like(model, NULL_SEED)
        report = {**report, "known_results": known_results(name, n_passages=n_passages, n_tokens=n_tokens, seed=seed,
                                                           random_init=random_init, texts=texts, device=device,
                                                           cache=cache and not refresh, _load=load)}
    return record.Report(report)


def _measure_all(name: str, args: dict, *, device: str, progress: bool, held: dict | None) -> dict:
    """The report :func:`analyze` returns, measured; ``held`` (if given) keeps the model, its tokenizer and the
    twin ``random_like(model, 1000)`` for :func:`connlap_lite.known.known_results` (the twin only if it is that one,
    the model only if it is not quantised)."""
    n_passages, n_tokens, seed, random_seeds = args["n_passages"], args["n_tokens"], args["seed"], args["random_seeds"]
    random_init, q4, texts, corpus = args["random_init"], args["q4"], args["texts"], args["corpus"]
    bos = args.get("bos")
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
    sinks = report["sink_columns"] = {}              # every condition's detected sink columns, per layer
    conditions[label] = measure(model, batch, encoder=encoder, twin=twin, progress=progress,
                                sinks_found=sinks.setdefault(label, []))
    if held is not None and not q4:
        held.update(model=model, tokenizer=tok)
        if random_seeds and random_seeds[0] == 0:   # random_like(model, 1000): the known results' null too
            held["twin"] = twin
    nulls = {}
    for s in random_seeds:                          # the first null is the twin itself: built once
        null = twin if twin is not None else random_like(model, 1000 + s)
        twin = None
        nulls[f"random{s}"] = measure(null, batch, encoder=encoder, head_nulls=False, progress=progress,
                                      sinks_found=sinks.setdefault(f"random{s}", []))
        del null
    if args["shuffle"]:
        conditions["shuffled"] = measure(model, shuffled(batch, 1, seed), encoder=encoder, head_nulls=False,
                                         progress=progress, sinks_found=sinks.setdefault("shuffled", []))
    conditions.update(nulls)
    report["seconds"] = time.perf_counter() - start
    return report
