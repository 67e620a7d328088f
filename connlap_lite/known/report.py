"""One model's measurements, its random-init null's, and the cached report that holds them.

:func:`measure_known` runs every measurement of the chapter on one model (natural passages, random tokens,
one repeated token); :func:`known_results` does so for a model and its null, caches the JSON (through
:mod:`connlap_lite.measure.cache`, as :func:`connlap_lite.measure.analysis.analyze` does) and adds the verdicts
(:mod:`connlap_lite.known.statements`).

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch

from ..measure import metrics as M
from ..measure.cache import cached, folder_identity, load
from ..models.adapters import describe
from ..models.extraction import attention_walks
from ..models.load import load_model, model_name
from ..models.twins import NULL_SEED
from ..models.text import check_sizes, passage_fields, passages_with_windows
from .distances import column_sum_defect, head_matched_distance, rank_one_residual, token_spread
from .sinks import EPS, INPUTS, first_token_scores, position_spread, random_tokens, repeated_tokens, sink_rate
from .statements import verdicts
from .stream import norm_weighted_walk, residual_stream, transported

# Bump whenever a measurement's definition (not merely its speed) changes: cached reports carry it.
# 2026-12-01.2: passages within one text (the packaged corpora).
# 2026-12-02.1: tv_norm_cross, the E1 chapter's cross-passage null of tv_norm, for the reuse statement.
# 2026-12-02.2: an encoder's column-sum defects at random-init seeds random1 to random4 too (the sinkformer statement
#               compares with the seeds as units).
# 2026-12-05.1: the passages of the asked corpus, BOS setting and split (before, always pydoc's, the tokenizer's
#               BOS and the exploratory split, whatever analyze measured E1 and E2 on); the report names them.
KNOWN_SCHEMA = "2026-12-05.1"
NULL_SEEDS = 5            # random<k> = random_like(model, NULL_SEED + k), as in the empirical chapters; the further
                          # seeds carry the column-sum defect only, and only in an encoder (where it is comparable)


def _lists(x: torch.Tensor) -> list:
    return x.detach().cpu().double().tolist()


def _sink_pass(model, batch: dict, spread: bool) -> dict:
    """First-token scores (and the spread of the residual stream over positions) on one input."""
    scores = []
    with residual_stream(model) as states:
        for lw in attention_walks(model, batch, progress=False):
            scores.append(first_token_scores(lw.attention.double()))
    S = torch.stack(scores, 1)                                             # (B, L, H)
    out = {"rate": _lists(sink_rate(S)), "score": _lists(S.mean(0))}
    if spread:
        out["spread"] = [_lists(position_spread(h)) for h in states]
    return out


def _natural_pass(model, batch: dict, encoder: bool) -> dict:
    """Every measurement on natural text, layer by layer."""
    res = {k: [] for k in ("mass_first", "mass_last", "mass_sinks", "norm_first", "norm_last", "norm_sinks",
                           "column_defect", "column_defect_nosink")}
    scores, walks, heads = [], [], []                   # heads: the last two layers' attention only
    for tag in ("", "2"):
        res["head_tv" + tag] = []
    with residual_stream(model) as states:
        for lw in attention_walks(model, batch, progress=False):
            A = lw.attention.double()                                      # (B, H, n, n)
            n = A.shape[-1]
            sinks = M.sink_columns(n, encoder)
            P = A.mean(1)
            N = norm_weighted_walk(A, transported(lw.transports, lw.inputs.float()))   # norms: float32 is plenty
            for name, W in (("mass", P), ("norm", N)):
                res[f"{name}_first"].append(_lists(M.sink_mass(W, [0])))
                res[f"{name}_last"].append(_lists(M.sink_mass(W, [n - 1])))
                res[f"{name}_sinks"].append(_lists(M.sink_mass(W, sinks)))
            res["column_defect"].append(_lists(column_sum_defect(P)))
            res["column_defect_nosink"].append(_lists(column_sum_defect(M.without_sinks(P, sinks))))
            scores.append(first_token_scores(A))
            walks.append(P)
            current = lw.attention.float()
            for back, tag in ((1, ""), (2, "2")):        # the head-matched distance to one and two layers back
                if len(heads) >= back:
                    res["head_tv" + tag].append(_lists(head_matched_distance(heads[-back], current)))
            heads = (heads + [current])[-2:]
    S = torch.stack(scores, 1)
    res["rate"], res["score"] = _lists(sink_rate(S)), _lists(S.mean(0))
    # rank collapse: (a) the layers' walks composed, with no skip path, on the embeddings; (b) the model's states
    Z = states[0].double()
    res["walk_residual"], res["walk_spread"] = [_lists(rank_one_residual(Z))], [_lists(token_spread(Z))]
    for P in walks:
        Z = (P / P.sum(-1, keepdim=True)) @ Z          # rows summed to 1 in float64, not float32's 1 +- 1e-7
        res["walk_residual"].append(_lists(rank_one_residual(Z)))
        res["walk_spread"].append(_lists(token_spread(Z)))
    res["state_residual"] = [_lists(rank_one_residual(h)) for h in states]
    # consecutive layers (step 1) and layers two apart (step 2): the E1 distances and the head-matched one; for
    # consecutive layers also the E1 chapter's cross-passage null of tv_norm (passage b against passage b + 1's next
    # layer, over the pair's own distance from uniform), the fair null of the reuse statement
    causal = not encoder
    for step, tag in ((1, ""), (2, "2")):
        pairs = list(zip(range(len(walks) - step), range(step, len(walks))))
        res["tv" + tag] = [_lists(M.walk_distance(walks[a], walks[b])) for a, b in pairs]
        res["tv_norm" + tag] = [_lists(M.normalised_walk_distance(walks[a], walks[b], causal)) for a, b in pairs]
    res["tv_norm_cross"] = [_lists(M.cross_passage_distance(walks[a], walks[a + 1],
                                                            M.uniform_scale(walks[a], walks[a + 1], causal)))
                            for a in range(len(walks) - 1)]
    return res


def measure_known(model, tokenizer, natural: dict, *, seed: int = 0) -> dict:
    """Every measurement of the chapter on ``model``: the natural passages ``natural`` (a batch of
    :func:`connlap_lite.passages`, as the empirical chapters read them), random tokens and one repeated token, as
    many passages of as many tokens. Per-layer lists of per-passage values.

    Returns ``{"natural": {...}, "random": {"rate", "score"}, "repeated": {"rate", "score", "spread"}}``;
    the natural text adds the sink masses (``mass_*``, ``norm_*``), ``column_defect(_nosink)``,
    ``walk_residual``, ``walk_spread``, ``state_residual``, ``tv``, ``tv_norm``, ``head_tv`` (adjacent
    layers), the same three with suffix ``2`` (layers two apart) and ``tv_norm_cross`` (adjacent layers, passage
    ``b`` against passage ``b + 1``'s next layer: :func:`connlap_lite.measure.metrics.cross_passage_distance`).
    :func:`known_results` calls it for the model and its null on one batch; the tests run it on tiny random models.
    The batch holds at least 2 passages (the cross-passage null pairs them).

    Chapter: *Known results, reproduced*.
    """
    n_passages, n_tokens = check_sizes(*natural["input_ids"].shape)
    encoder = describe(model)["encoder"]
    out = {"natural": _natural_pass(model, natural, encoder)}
    out["random"] = _sink_pass(model, random_tokens(tokenizer, natural, seed), spread=False)
    out["repeated"] = _sink_pass(model, repeated_tokens(tokenizer, n_passages, n_tokens, seed), spread=True)
    return out


def seed_defects(model, natural: dict) -> dict:
    """The column-sum defects of ``model`` (a further random-init seed) on the natural passages :func:`measure_known`
    reads: ``{"natural": {"column_defect": ..., "column_defect_nosink": ...}}``, per layer and passage."""
    encoder = describe(model)["encoder"]
    res = _natural_pass(model, natural, encoder)
    return {"natural": {k: res[k] for k in ("column_defect", "column_defect_nosink")}}


def natural_record(report: dict) -> dict:
    """The natural-text measurements of a :func:`known_results` report in the shape of an
    :func:`connlap_lite.measure.analysis.analyze` record, ``{"conditions": {condition: {metric: per-layer lists}}}``, so that the
    record's readers (:func:`connlap_lite.verdicts.record.layer_means`, :func:`connlap_lite.verdicts.record.layer_curve`) read them.

    >>> from connlap_lite.known import toy_report
    >>> from connlap_lite.verdicts.record import layer_means
    >>> [round(float(v), 4) for v in layer_means(natural_record(toy_report()), "head_tv")]
    [0.1035, 0.1035]
    """
    return {"conditions": {c: v["natural"] for c, v in report["conditions"].items()}}


def absolute_positions(model) -> bool:
    """True if the model adds learned absolute position embeddings to its tokens (BERT, GPT-2).

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> absolute_positions(BertModel(BertConfig(hidden_size=8, num_attention_heads=2, intermediate_size=8,
    ...                                         num_hidden_layers=1, vocab_size=10)))
    True

    Chapter: *Known results, reproduced*.
    """
    return any("position_embeddings" in name or name.endswith("wpe.weight") for name, _ in model.named_parameters())


def _problem(report, name: str, random_init: bool) -> str | None:
    """Why a cached report cannot be used (None if it can)."""
    main = "random" if random_init else "trained"
    ok = (isinstance(report, dict) and report.get("schema") == KNOWN_SCHEMA and report.get("model") == name
          and isinstance(report.get("conditions"), dict) and {main, "random0"} <= set(report["conditions"])
          and isinstance(report.get("sink_rate"), dict))
    return None if ok else f"it is not a {KNOWN_SCHEMA} report on {name!r}"


def _cached(path: Path, name: str, random_init: bool) -> dict | None:
    """The cached report at ``path``, or None (absent, unreadable or of another shape: a warning says which, and
    the caller measures again), through the cache that ``analysis`` reads too."""
    return load(path, lambda r: _problem(r, name, random_init))


def known_results(name: str, *, n_passages: int = 8, n_tokens: int = 64, seed: int = 0, random_init: bool = False,
                  texts: list[str] | None = None, corpus: str = "pydoc", bos: bool | None = None,
                  split: str = "exploratory", device: str = "cpu", cache: bool = True, _load=None) -> dict:
    """The chapter's measurements on model ``name`` and on its random-init null, with the verdicts.

    Returns a JSON-able dict: model facts, the passages read (``corpus``, ``bos``, ``split``, ``windows``: as
    :func:`connlap_lite.measure.analysis.analyze` reads them, from the same arguments), ``sink_rate``
    (``{condition: {input: mean rate}}`` for the conditions ``trained`` (or ``random`` with ``random_init``) and
    ``random0``, inputs ``natural``, ``random``, ``repeated``), ``conditions`` (every measurement, per layer and
    passage; an encoder adds ``random1`` to ``random4`` with the column-sum defect only, :func:`seed_defects`,
    which the sinkformer statement compares with as units) and ``verdicts`` (:func:`verdicts`). Every condition
    reads one batch of passages, cut once. Cached as JSON in ``cache_dir() / "known"`` (the pipeline of
    :func:`connlap_lite.measure.analysis.analyze`: a cache that cannot be written is a warning, the report is returned),
    keyed by the arguments, :data:`KNOWN_SCHEMA`, the corpus text's digest and, for a local folder, its files; the
    verdicts are recomputed on every call.  (``_load``: :func:`connlap_lite.measure.analysis.analyze`'s model,
    tokenizer, null ``random_like(model, NULL_SEED)`` and ``(batch, windows)`` of these arguments, already loaded
    and cut, as a function returning the four: :func:`connlap_lite.__main__.analyze_with_known`.)

    Chapter: *Known results, reproduced*.
    """
    from ..models.twins import random_like

    name = model_name(name)
    n_passages, n_tokens = check_sizes(n_passages, n_tokens)
    passages = passage_fields(texts, corpus, bos, split)
    texts, corpus = passages["texts"], passages["corpus"]
    args = dict(n_passages=n_passages, n_tokens=n_tokens, seed=seed, random_init=random_init, eps=EPS,
                null_seed=NULL_SEED, null_seeds=NULL_SEEDS, **passages)
    identity = folder_identity(name)
    fields = args if identity is None else {"weights": identity, **args}

    def loaded():
        model, tok = load_model(name, device=device, random_init=random_init, seed=seed)
        cut = passages_with_windows(tok, n_passages, n_tokens, seed=seed, texts=texts, corpus=corpus, bos=bos,
                                    split=split)
        return model, tok, random_like(model, NULL_SEED), cut

    def compute() -> dict:
        start = time.perf_counter()
        model, tok, null, (batch, windows) = (_load or loaded)()
        facts = describe(model)
        main = "random" if random_init else "trained"
        report = {"schema": KNOWN_SCHEMA, "model": name, "family": facts["family"],
                  "encoder": facts["encoder"], "absolute_positions": absolute_positions(model),
                  "layers": facts["layers"], "heads": facts["heads"], "passages": n_passages, "tokens": n_tokens,
                  "seed": seed, "corpus": corpus, "bos": bos, "split": split, "windows": [list(w) for w in windows],
                  "eps": EPS, "main": main, "conditions": {}}
        report["conditions"][main] = measure_known(model, tok, batch, seed=seed)
        report["conditions"]["random0"] = measure_known(null, tok, batch, seed=seed)
        del null
        for k in range(1, NULL_SEEDS if facts["encoder"] else 1):   # a forward pass each: seconds for MiniLM
            report["conditions"][f"random{k}"] = seed_defects(random_like(model, NULL_SEED + k), batch)
        report["sink_rate"] = {c: {i: float(torch.tensor(v[i]["rate"]).mean()) for i in INPUTS}
                               for c, v in report["conditions"].items() if set(INPUTS) <= set(v)}
        report["seconds"] = time.perf_counter() - start
        return report

    report = cached("known", name, KNOWN_SCHEMA, fields, lambda r: _problem(r, name, random_init), compute,
                    read=cache, write=cache)
    report["verdicts"] = verdicts(report)
    return report
