"""Measure E1-E3 on a model against its nulls: the one function the chapters and the CLI call.

``analyze(name)`` loads a model, builds its nulls (the same architecture at random
initialisation, five seeds; the trained model on shuffled passages), streams every layer,
and returns per-layer, per-passage values of every metric in :mod:`connlap_lite.measure.metrics`.
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
The record's shape is :mod:`connlap_lite.verdicts.record`'s; ``analyze`` returns a read-only
:class:`~connlap_lite.verdicts.record.Report`.  Reading the report (curves, trends, verdicts) is :mod:`connlap_lite.verdicts.rules`'s job.
Results are cached as JSON, keyed by the model name, the arguments, the metrics' ``SCHEMA``
(bumped whenever a metric's definition changes), a digest of the corpus's text (the package's
corpora, :func:`connlap_lite.models.text.corpus_digest`) and, for a local folder, the identity of its files, so the chapters that
share a measurement compute it once.  A cached report that cannot be read or does not have the
expected shape is recomputed (with a warning) and overwritten; a cache that cannot be written is a
warning, and the report is returned (the pipeline of :mod:`connlap_lite.measure.cache`, which
:func:`connlap_lite.known.known_results` shares).

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import contextlib
import time

import torch

from . import metrics as M
from ..verdicts import record
from . import rivals as R
from .edges import edge_singular_values, rank_free_defect
from ..transports import HeadTransports
from ..models.twins import NULL_SEED, random_like
from .nulls import gaussian_null, quantise_q4, rotation_null, shuffled
from .._backend import check_int, undefined
from ..chains import reversibility_defect
from .cache import cached, folder_identity
from ..models.adapters import describe
from ..models.extraction import attention_walks, head_transports, max_positions
from ..models.memory import check_memory
from ..models.load import check_model, load_model, model_name
from ..models.verify import check as verify_check
from ..models.text import check_sizes, passage_fields, passages_with_windows

# the shuffled null's permutations: "shuffled" (the first, the one measured before 2026-12-04) and "shuffled1" ...
# "shuffled4", each passage's tokens permuted anew (permutation p drawn with seed + p); the rules count them as units
# like the random-init seeds (E1's rule 4, connlap_lite.verdicts.rules)
SHUFFLES = 5
ABLATION_PASSAGES = 2   # passages on which each layer's ablation cost is measured (two forwards per layer)
RIVAL_SEEDS = 3         # the random-init seeds that measure the rival readings (the rules' minimum, MIN_SEEDS)
# the record's shape (metric names, units, layer separations) is connlap_lite.verdicts.record's: analyze writes by it


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
    out = {"uniform_dist": M.walk_distance(P, U),
           "rev": reversibility_defect(M.teleport(P), atol=M.ROW_TOL),
           "rev_nosink": reversibility_defect(M.teleport(Pn), atol=M.ROW_TOL)}
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
                  spectra_Q: list | None = None, fixed: list[int] | None = None) -> dict:
    """Step metrics from layer ``P`` to layer ``Q`` (``sinks``: both layers' sink columns); the spectral distances
    from the spectra ``_walk_metrics`` returned for each where given (the same numbers as ``M.spectral_distance``,
    without solving them again).

    The inner nulls put another passage's next layer (``cross_passage_...``) or the other passages' mean next
    layer (``positional_...``) in place of the passage's own, and are divided by the trained pair's own
    :func:`metrics.uniform_scale`: one yardstick for the step and its nulls.

    ``fixed`` (the sink columns assumed before they were detected, :func:`metrics.sink_columns`) adds the archived
    measurements of ``tv_norm_nosink`` and its inner nulls (:data:`connlap_lite.verdicts.record.ARCHIVED`): ``_pre1201``
    (fixed sinks, each null divided by its own pair's distance from the sink-free uniform walk) and ``_pre1130``
    (the same, divided by the distance from the full uniform walk)."""
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
    if fixed is not None:
        Pf, Qf = (Pn, Qn) if list(fixed) == list(sinks) else (M.without_sinks(P, fixed), M.without_sinks(Q, fixed))
        pairs = [("", Qf)]
        if B > 1:
            pairs += [("cross_passage_", Qf.roll(-1, 0)), ("positional_", (Qf.sum(0, keepdim=True) - Qf) / (B - 1))]
        for tag, C in pairs:
            d = M.walk_distance(Pf, C)
            out[tag + "tv_norm_nosink_pre1201"] = M.over_scale(d, M.uniform_scale(Pf, C, causal, fixed))
            out[tag + "tv_norm_nosink_pre1130"] = M.over_scale(d, M.uniform_scale(Pf, C, causal))
    return out


def _data_defects(heads, X: torch.Tensor, keep: list[int], twins: list, seed: int,
                  fixed_keep: list[int] | None = None, seconds: dict | None = None) -> tuple[dict, HeadTransports]:
    """The data defect on the non-sink tokens ``keep``: the trained heads', and the nulls' on the same inputs (each
    twin's transports, :data:`connlap_lite.verdicts.record.DATA_SEED_KEYS`; Gaussian transports); and the Gaussian null's
    heads (drawn last, with ``seed``, so that they are alive beside nothing else of this size; ``measure`` reuses
    them for ``head_defect_gaussian``).  ``fixed_keep`` (the tokens that are not at the fixed sink columns) adds the
    archived ``_pre1201`` values of the trained heads, the first twin and the Gaussian transports."""
    Xk = X[:, keep]
    Xf = None if fixed_keep is None or fixed_keep == keep else X[:, fixed_keep]

    def defects(name, T):
        out[name] = M.data_isometry_defect(T, Xk).mean(-1)
        if fixed_keep is not None and name in ("data_defect_nosink", "data_defect_cross", "data_defect_gaussian"):
            out[name + "_pre1201"] = out[name] if Xf is None else M.data_isometry_defect(T, Xf).mean(-1)

    out: dict = {}
    defects("data_defect_nosink", heads)
    start = time.perf_counter()
    for key, T in zip(record.DATA_SEED_KEYS, twins):
        defects(key, T)
    if seconds is not None:
        seconds["twins"] = seconds.get("twins", 0.0) + time.perf_counter() - start
    gaussian = gaussian_null(heads, seed)
    defects("data_defect_gaussian", gaussian)
    return out, gaussian


def edge_values(lw, walks: torch.Tensor, sinks: list[int], nulls: dict | None = None) -> dict:
    """The heaviest non-sink, off-diagonal edge transports, per passage (``walks``: the layer's float64 head-mean
    walks): their rank-free defect (``edge_defect``) and spectral dominance (``edge_dominance``), and the dominance
    of the same edges' gates on each of ``nulls`` (``{"gaussian": heads, "rotation": heads}``: ``edge_dominance_<key>``);
    every edge of the measured passages in one :func:`connlap_lite.measure.edges.edge_singular_values` call per heads."""
    k, n = min(record.EDGE_PASSAGES, walks.shape[0]), walks.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool, device=walks.device)
    mask.fill_diagonal_(False)
    mask[:, sinks] = False
    mask[sinks, :] = False
    top = torch.where(mask, walks[:k], torch.zeros((), dtype=walks.dtype)).flatten(1).topk(record.EDGES).indices
    rows, cols = top // n, top % n
    s = edge_singular_values(lw.attention[:k], lw.transports, rows, cols)
    out = {"edge_defect": rank_free_defect(s).mean(-1), "edge_dominance": M.spectral_dominance(s).mean(-1)}
    for key, heads in (nulls or {}).items():
        s = edge_singular_values(lw.attention[:k], heads, rows, cols)
        out[f"edge_dominance_{key}"] = M.spectral_dominance(s).mean(-1)
    return out


def _unit(d: int, seed: int) -> torch.Tensor:
    """A random unit direction in ``d`` dimensions (``seed``): the state alignment's direction null."""
    u = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return u / u.norm()


def _own_values(lw) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's attention output without its bias offset, and each token's own value ``sum_h T_h x_i``, both
    ``(B, n, d)`` float64 (from the factors: no ``d x d`` matrix)."""
    heads = lw.transports
    X = lw.inputs.double()
    values = torch.einsum("hdr,bnhr->bnd", heads.U.double(), torch.einsum("hre,bne->bnhr", heads.V.double(), X))
    output = lw.output.double()
    if heads.offset is not None:
        output = output - heads.offset.double()
    return output, values


def twin_transports(twin, layers: int) -> list:
    """Every layer's head transports of ``twin`` (from its weights: no forward pass), to pass to :func:`measure`
    as a twin without keeping the model."""
    return [head_transports(twin, layer) for layer in range(layers)]


def measure(model, batch: dict, *, encoder: bool, head_nulls: bool = True, twin=None,
            progress: bool = False, sinks_found: list | None = None, sink_mass_columns: list[int] | None = None,
            seconds: dict | None = None, rival: bool = True, ablation: bool = False) -> dict:
    """Every metric for every layer of ``model`` on ``batch``: ``{metric: [per-layer values]}``.

    Walk and data metrics are lists of per-passage values; head metrics are per-head values.
    The sink columns are read from each layer's walks (:func:`metrics.detect_sinks`, over the passages),
    not assumed; a step between two layers leaves out both layers' sinks.  ``sinks_found``, if given, gets
    each layer's sink columns appended.
    ``sink`` is the mass on ``sink_mass_columns`` in every layer (:func:`metrics.sink_mass`); by default those are
    this model's own sink columns, every column detected in some layer (``analyze`` passes the trained model's to
    its nulls, so that every condition's sink mass is measured on the same tokens).
    ``head_nulls`` adds the nulls measured inside the model (rotated and Gaussian heads, Gaussian
    transports on the data); ``twin`` (a model of the same architecture, e.g. ``random_like``, or a list of
    them, or of their per-layer transports, :func:`twin_transports`) adds ``data_defect_cross`` (and
    ``data_defect_cross_2``, ``_3`` for a second and third twin): their transports on this model's inputs.
    The archived measurements (:data:`connlap_lite.verdicts.record.ARCHIVED`) are measured beside the current ones.
    ``seconds``, if given, gets the time spent applying the twins' transports (``"twins"``).
    ``rival`` adds the rival readings' measures (:data:`connlap_lite.verdicts.record.RIVAL_METRICS`, and the dominance
    metrics: one more forward, :func:`connlap_lite.measure.rivals.layer_updates`); ``ablation`` adds the cost of zero- and
    mean-ablating each layer's update on the first :data:`ABLATION_PASSAGES` passages (two forwards of those per
    layer, :func:`connlap_lite.measure.rivals.ablation_costs`; each layer's mean update is over every passage);
    ``seconds`` then gets their times too (``"rival"``, ``"ablation"``).
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
    facts = describe(model)
    causal = not facts["encoder"]
    ids = batch["input_ids"]
    if isinstance(ids, torch.Tensor) and ids.ndim == 2:   # (anything else: attention_walks says what is wrong)
        # every layer's walks kept for the sink mass; the last four for the separations and the metrics'
        # temporaries: 36 (memory.peak_bytes; tests/contracts/test_faults.py measures the peak against it)
        check_memory(model, *ids.shape, walks=facts["layers"] + 36, what=type(model).__name__)
    if bool(encoder) == causal:
        raise ValueError(f"encoder={encoder} but {type(model).__name__} is {'causal' if causal else 'bidirectional'}; "
                         f"pass encoder={not causal} (its sink tokens depend on it)")
    twins = [] if twin is None else list(twin) if isinstance(twin, (list, tuple)) else [twin]
    if len(twins) > len(record.DATA_SEED_KEYS):
        raise ValueError(f"twin must hold at most {len(record.DATA_SEED_KEYS)} twins, got {len(twins)}")
    for t in twins:
        if not isinstance(t, list) and type(t) is not type(model):
            raise TypeError(f"twin must be a model of the same architecture as model ({type(model).__name__}), "
                            f"got {type(t).__name__}; build it with random_like(model, seed)")
    res: dict[str, list] = {k: [] for k in (record.WALK_METRICS + record.STEP_METRICS + record.SEP_METRICS
                                           + record.HEAD_METRICS + record.DATA_METRICS + record.RIVAL_METRICS
                                           + record.RIVAL_HEAD_METRICS + record.RIVAL_EDGE_METRICS)}
    previous: list[torch.Tensor] = []                               # the last max(record.SEPARATIONS) layers' walks
    previous_spectra: list = []
    n = batch["input_ids"].shape[1]
    fixed = M.sink_columns(n, encoder)                               # the sink columns assumed before 2026-12-01
    fixed_keep = [i for i in range(n) if i not in fixed]
    found: list[list[int]] = []                                     # every layer's sink columns so far
    walks: list[torch.Tensor] = []                                  # (kept for the sink mass when its columns are
    directions: dict = {"state_alignment": [], "state_alignment_random": [], "state_alignment_cross": []}
    capture = R.captured(model) if rival else contextlib.nullcontext(({}, {}))
    with capture as (residuals, updates):       # (the residual stream and each update, from the stream's forward)
        for lw in attention_walks(model, batch, progress=progress):    # this model's own, known after the last layer)
            A = lw.attention
            P = A[:, 0].double()                                       # (B, n, n): the layer's walks, the head mean
            for h in range(1, A.shape[1]):                             # summed head by head: no float64 copy of A
                P += A[:, h]
            P /= A.shape[1]
            sinks = M.detect_sinks(P)
            found.append(sinks)
            keep = [i for i in range(n) if i not in sinks]
            if sink_mass_columns is None:
                walks.append(P)
            else:
                res["sink"].append(M.sink_mass(P, sink_mass_columns).tolist())
            spectra: list = []
            for k, v in _walk_metrics(P, sinks, spectra).items():
                res[k].append(v.tolist())
            if previous:
                both = sorted(set(found[-2]) | set(sinks))
                same = both == sinks == found[-2]                          # (the spectra without sinks are reusable)
                for k, v in _step_metrics(previous[-1], P, both, not encoder, previous_spectra if same else None,
                                          spectra if same else None, fixed=fixed).items():
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
            rotated = rotation_null(heads, lw.layer) if head_nulls else None
            if head_nulls:
                res["head_defect_rotation"].append(M.scaled_isometry_defect(rotated).tolist())
            res["copy"].append(M.copy_score(heads).tolist())
            res["overlap"].append(M.read_write_overlap(heads).tolist())
            X = lw.inputs.double()
            res["data_defect"].append(M.data_isometry_defect(heads, X).mean(-1).tolist())
            if head_nulls:
                others = [(t[lw.layer] if isinstance(t, list) else head_transports(t, lw.layer)).to(dtype=heads.U.dtype)
                          for t in twins]
                values, gaussian = _data_defects(heads, X, keep, others, lw.layer, fixed_keep, seconds)
                for k, v in values.items():
                    res[k].append(v.tolist())
                # the same Gaussian heads (one draw for E2's two Gaussian nulls), their QR factors already cached
                res["head_defect_gaussian"].append(M.scaled_isometry_defect(gaussian).tolist())
                if rival:
                    res["head_dominance_gaussian"].append(M.head_dominance(gaussian).tolist())
                    res["head_dominance_rotation"].append(M.head_dominance(rotated).tolist())
                    if others:
                        directions["state_alignment_cross"].append(M.top_direction(others[0]))
            edge_nulls = {"gaussian": gaussian, "rotation": rotated} if head_nulls and rival else None
            for k, v in edge_values(lw, P, sinks, edge_nulls).items():
                if k == "edge_defect" or rival:
                    res[k].append(v.tolist())
            if head_nulls:
                del gaussian, others
            del rotated, edge_nulls
            if rival:                                                  # the rival readings of this layer
                timing = time.perf_counter()
                B = P.shape[0]
                res["self_loop_nosink"].append(M.self_loop_share(P, sinks).tolist())
                res["self_loop_uniform"].append([M.uniform_self_loop(n, not encoder, sinks)] * B)
                output, values = _own_values(lw)
                res["self_alignment"].append(M.self_alignment(output, values, keep).tolist())
                res["self_alignment_uniform"].append(M.self_alignment(M.uniform_outputs(values, not encoder), values,
                                                                      keep).tolist())
                del output, values
                res["head_dominance"].append(M.head_dominance(heads).tolist())
                directions["state_alignment"].append(M.top_direction(heads))
                directions["state_alignment_random"].append(_unit(heads.d, lw.layer))
                if seconds is not None:
                    seconds["rival"] = seconds.get("rival", 0.0) + time.perf_counter() - timing
    if rival:                   # the rival readings of the stream's forward: the update ratio, the states' alignment
        timing = time.perf_counter()
        rows = [[i for i in range(n) if i not in f] for f in found]
        updates = R.update_measures(residuals, updates, directions={k: v for k, v in directions.items() if v},
                                    rows=rows)
        for k in ["update_ratio", *directions]:
            res[k] = [v.tolist() for v in updates.get(k, [])]
        if seconds is not None:
            seconds["rival"] = seconds.get("rival", 0.0) + time.perf_counter() - timing
        if ablation:
            timing = time.perf_counter()
            k = min(ABLATION_PASSAGES, batch["input_ids"].shape[0])
            few = {key: v[:k] if isinstance(v, torch.Tensor) else v for key, v in batch.items()}
            for k, v in R.ablation_costs(model, few, encoder=encoder, mean_updates=updates["mean_updates"]).items():
                res[k] = [c.tolist() for c in v]
            if seconds is not None:
                seconds["ablation"] = time.perf_counter() - timing
        del updates
    if sink_mass_columns is None:                                  # this model's own sinks: every column detected
        columns = sink_columns_of(found)
        res["sink"] = [M.sink_mass(W, columns).tolist() for W in walks]
    if sinks_found is not None:
        sinks_found.extend(found)
    return {k: v for k, v in res.items() if v}


def sink_columns_of(found: list[list[int]]) -> list[int]:
    """The columns on which a report measures the sink mass: every column detected as a sink in some layer.

    >>> sink_columns_of([[], [0], [0, 5], []])
    [0, 5]
    """
    return sorted(set().union(*found)) if found else []


# Bump whenever a metric's definition (not merely its speed) changes: cached reports carry it.
SCHEMA = "2026-12-05.2"
# 2026-12-01.4: detected sinks, one yardstick for the inner nulls, input dependence; .5: passages within one text.
# 2026-12-02.1: the sink mass of every condition on the trained model's sink columns (sink_mass_columns); E2's data
# null from three random-init seeds' transports (data_defect_cross, _2, _3); the archived measurements of
# verdicts.history.MEASUREMENT_CHANGES (keys ending _pre1130, _pre1201); the passages' windows, fixed across BOS toggles.
# 2026-12-04.1: the shuffled null drawn with SHUFFLES permutations ("shuffled", "shuffled1", ...), the first as before.
# 2026-12-04.3 (on .1's branch as .2, .3): the rival readings (record.RIVAL_METRICS, RIVAL_HEAD_METRICS, RIVAL_EDGE_METRICS; rival_seconds);
# the ablation costs of the trained model on its first ABLATION_PASSAGES passages (.2 had every passage, and the
# first random-init seed's too: too slow for make test); the rival readings in the first RIVAL_SEEDS seeds only.
# 2026-12-04.4: both: the five shuffle permutations, and the rival readings (the first permutation only).
# 2026-12-05.1: the rival readings read each layer's update where the block adds it to the residual stream: after
# the norm that Gemma 2 and 3 and OLMo2 apply to the attention's output (rivals.update_maps; it was read before it).
# 2026-12-05.2: E1's rev and rev_nosink by chains.reversibility_defect, which renormalises each row in float64 before
# solving for pi (the old path solved on the rows as they came): the same to 2.3e-7 relative on the book's float32
# models, up to about 5e-4 on half-precision walks, whose rows miss 1 by that much.


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
    if not isinstance(report.get("windows"), list) or not isinstance(report.get("sink_mass_columns"), list):
        return "it does not say which passages it measured or on which columns its sink mass is"
    want = ["random" if args["random_init"] else "trained"] + [f"random{s}" for s in args["random_seeds"]]
    want += record.shuffle_names(SHUFFLES) if args["shuffle"] else []
    for cond in want:
        values = conditions.get(cond)
        if not isinstance(values, dict) or not values:
            return f"condition {cond!r} is missing"
        for metric, per_layer in values.items():
            expected = layers - record.separation(metric)
            if not isinstance(per_layer, list) or len(per_layer) != expected or \
                    not all(isinstance(v, list) and v for v in per_layer):
                return f"{cond}/{metric} does not hold {expected} per-layer lists"
    found = record.problems(report)                 # lengths, numbers and counts, against the report itself
    return "; ".join(found[:3]) if found else None


def _seeds(seeds, name: str) -> list[int]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"{name} must be a sequence of ints such as (0, 1), got {seeds!r}")
    seeds = [check_int(s, f"{name} entries", low=0) for s in seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{name} must not repeat a seed, got {seeds}")
    return seeds


def _check_args(name, n_passages, n_tokens, seed, random_seeds, device) -> tuple:
    """The arguments checked, as plain Python values (a path's string, numpy ints as ints: the key is JSON)."""
    name = model_name(name)
    n_passages, n_tokens = check_sizes(n_passages, n_tokens)
    seed = check_int(seed, "seed", low=0)
    seeds = _seeds(random_seeds, "random_seeds")
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda', got {device!r}")
    return name, n_passages, n_tokens, seed, seeds


def analyze(name: str, *, n_passages: int = 16, n_tokens: int = 128, seed: int = 0, random_seeds=(0, 1, 2, 3, 4),
            shuffle: bool = True, random_init: bool = False, q4: bool = False, texts: list[str] | None = None,
            corpus: str = "pydoc", bos: bool | None = None, device: str = "cpu", cache: bool = True,
            refresh: bool = False, progress: bool = False, keep: dict | None = None, data_seeds=None,
            split: str = "exploratory", rivals: bool = True) -> "record.Report":
    """Measure every E1/E2 metric on model ``name`` and on its nulls.

    Returns a :class:`connlap_lite.verdicts.record.Report` (read-only, JSON-able, read like a dict): model facts
    (family, encoder, layers, parameter counts), ``sink_columns`` (each condition's detected sink columns,
    per layer), ``sink_mass_columns`` (the trained model's sink columns, on which every condition's ``sink`` is
    measured), ``windows`` (each passage's text and first token, :func:`connlap_lite.models.text.windows`),
    ``data_null_seeds`` and ``conditions``: ``"trained"`` (or ``"random"`` with ``random_init``), ``"random<seed>"``
    for each of ``random_seeds``, and the shuffled null's :data:`SHUFFLES` permutations (``"shuffled"``,
    ``"shuffled1"``, ...; :func:`connlap_lite.verdicts.record.shuffle_names`), each ``{metric: per-layer values}``.

    ``data_seeds``: the random-init seeds whose head transports, built from their weights alone (no forward
    pass), are applied to the trained model's inputs for E2's data null (``data_defect_cross``, ``_2``, ``_3``);
    by default the first three of ``random_seeds``.

    ``corpus`` names the texts (:data:`connlap_lite.models.text.CORPORA`) unless ``texts`` are given.
    ``split="confirmation"`` measures the confirmation split instead of the exploratory passages: windows that
    touch no exploratory draw (:func:`connlap_lite.models.text.windows`), picked by ``seed`` (the book passes
    :data:`connlap_lite.verdicts.rules.CONFIRMATION_SEED`); the report records it as ``"split"``.
    ``bos`` puts the beginning-of-sequence token first (True) or leaves it out (False) instead of
    following the tokenizer (None; see :func:`connlap_lite.passages`): the sink ablation of chapter *Scorecard*.
    ``rivals=False`` leaves out the rival readings' measures (:data:`connlap_lite.verdicts.record.RIVAL_METRICS` and the
    dominance metrics), the ablation costs among them: a measurement that none of them reads (E1's long passages,
    where two forwards per layer over the full vocabulary cost ten times the rest); the report records
    ``"rivals": False``.
    ``cache`` reads and writes the measurement cache; ``refresh`` recomputes and overwrites
    the cached report.  A cached report that is unreadable or malformed is recomputed with a warning; a
    report that cannot be cached (a read-only or full disk) is returned, with a warning naming the path.
    ``keep`` (a dict) receives, when the model is measured here (not read from the cache, nor quantised),
    ``model``, ``tokenizer``, ``passages`` (the batch and its windows) and ``twin`` (``random_like(model,
    NULL_SEED)`` where it was built): what ``connlap analyze`` hands to the known results, so that both pipelines
    read one model, one batch and one null (:func:`connlap_lite.__main__.analyze_with_known`).

    Chapters: *E1*, *E2*, *E3*.
    """
    name, n_passages, n_tokens, seed, random_seeds = _check_args(name, n_passages, n_tokens, seed, random_seeds, device)
    passages = passage_fields(texts, corpus, bos, split)
    if not isinstance(rivals, bool):
        raise TypeError(f"rivals must be True or False (False leaves out the rival readings), got {rivals!r}")
    if keep is not None and not isinstance(keep, dict):
        raise TypeError(f"keep must be a dict (it receives the loaded model) or None, got {type(keep).__name__}")
    data_seeds = random_seeds[:len(record.DATA_SEED_KEYS)] if data_seeds is None else _seeds(data_seeds, "data_seeds")
    if len(data_seeds) > len(record.DATA_SEED_KEYS):
        raise ValueError(f"data_seeds must hold at most {len(record.DATA_SEED_KEYS)} seeds, got {data_seeds}")
    args = dict(n_passages=n_passages, n_tokens=n_tokens, seed=seed, random_seeds=random_seeds, data_seeds=data_seeds,
                shuffle=shuffle, random_init=random_init, q4=q4, **passages)
    if not rivals:                                  # (absent when measured: the key's default)
        args["rivals"] = False
    identity = folder_identity(name)
    fields = args if identity is None else {"weights": identity, **args}

    def compute() -> dict:
        return _measure_all(name, args, device=device, progress=progress, held=keep)

    report = cached("measurements", name, SCHEMA, fields, lambda r: _report_problem(r, name, args), compute,
                    read=cache and not refresh, write=cache or refresh)
    return record.Report(report)


def _measure_all(name: str, args: dict, *, device: str, progress: bool, held: dict | None) -> dict:
    """The report :func:`analyze` returns, measured; ``held`` (if given) keeps the model, its tokenizer, the batch and the
    twin ``random_like(model, NULL_SEED)`` for :func:`connlap_lite.known.known_results` (the twin only if it is that one,
    the model only if it is not quantised)."""
    n_passages, n_tokens, seed, random_seeds = args["n_passages"], args["n_tokens"], args["seed"], args["random_seeds"]
    random_init, q4, texts, corpus = args["random_init"], args["q4"], args["texts"], args["corpus"]
    bos, data_seeds, rivals = args.get("bos"), args["data_seeds"], args.get("rivals", True)
    start = time.perf_counter()
    model, tok = load_model(name, device=device, random_init=random_init, seed=seed)
    limit = max_positions(model)
    if limit is not None and n_tokens > limit:
        raise ValueError(f"n_tokens must be at most {limit} for {name!r} (its positions), got {n_tokens}")
    # before any forward: the measurement's peak, with the random-init nulls built beside the model
    check_memory(model, n_passages, n_tokens, walks=describe(model)["layers"] + 36, models=2, what=repr(name))
    if q4:
        quantise_q4(model)
    batch, windows = passages_with_windows(tok, n_passages, n_tokens, seed=seed, texts=texts, corpus=corpus, bos=bos,
                                           split=args.get("split", "exploratory"))
    # no number from a layer that the adapter misreads: the walk must reproduce every attention module first
    verify_check(model, {k: v[:2] for k, v in batch.items()})
    facts = describe(model)
    encoder = facts["encoder"]
    total, non_embedding = parameter_counts(model)
    report = {"schema": SCHEMA, "model": name, **facts, "parameters": total, "non_embedding_parameters": non_embedding,
              "passages": n_passages, "tokens": n_tokens, "seed": seed, "q4": q4, "corpus": corpus,
              "corpus_digest": args["corpus_digest"], "bos": bos, "split": args.get("split", "exploratory"),
              "windows": [list(w) for w in windows],
              "data_null_seeds": data_seeds, **({} if rivals else {"rivals": False}), "conditions": {}}
    label = "random" if random_init else "trained"
    conditions = report["conditions"]
    # E2's data null: each data seed's head transports, from its weights (no forward pass); the first random-init
    # null's model is kept to be measured below (built once)
    kept, twins, timing = {}, [], time.perf_counter()
    for s in data_seeds:
        twin = random_like(model, NULL_SEED + s)
        twins.append(twin_transports(twin, facts["layers"]))
        if random_seeds and s == random_seeds[0] or held is not None and s == 0:
            kept[s] = twin
        del twin
    built = time.perf_counter() - timing            # (building the twins and their transports)
    sinks = report["sink_columns"] = {}              # every condition's detected sink columns, per layer
    took = report["condition_seconds"] = {}          # what each condition cost (building its model included,
                                                     # unless it was built for the data null above)
    timing, applied = time.perf_counter(), {}
    rival = report["rival_seconds"] = {}             # what the rival readings cost, per condition (ablation apart)
    conditions[label] = measure(model, batch, encoder=encoder, twin=twins or None, progress=progress,
                                sinks_found=sinks.setdefault(label, []), seconds=applied, rival=rivals,
                                ablation=rivals)
    rival[label] = {k: applied[k] for k in ("rival", "ablation") if k in applied}
    took[label] = time.perf_counter() - timing
    # E2's data null, what it cost: building the seeds' models and transports, and applying them to the inputs
    report["data_null_seconds"] = built + applied.get("twins", 0.0)
    del twins
    columns = report["sink_mass_columns"] = sink_columns_of(sinks[label])
    if held is not None and not q4:
        held.update(model=model, tokenizer=tok, passages=(batch, windows))
        if 0 in kept:                               # random_like(model, 1000): the known results' null too
            held["twin"] = kept[0]
    nulls = {}
    for s in random_seeds:
        timing = time.perf_counter()
        null = kept.pop(s) if s in kept else random_like(model, NULL_SEED + s)
        spent: dict = {}
        nulls[f"random{s}"] = measure(null, batch, encoder=encoder, head_nulls=False, progress=progress,
                                      sinks_found=sinks.setdefault(f"random{s}", []), sink_mass_columns=columns,
                                      seconds=spent, rival=rivals and s in random_seeds[:RIVAL_SEEDS])
        rival[f"random{s}"] = spent
        del null
        took[f"random{s}"] = time.perf_counter() - timing
    kept.clear()
    for p, cond in enumerate(record.shuffle_names(SHUFFLES) if args["shuffle"] else []):
        timing = time.perf_counter()
        spent = {}
        conditions[cond] = measure(model, shuffled(batch, 1, seed + p), encoder=encoder, head_nulls=False,
                                   progress=progress, sinks_found=sinks.setdefault(cond, []),
                                   sink_mass_columns=columns, seconds=spent, rival=rivals and p == 0)
        if p == 0:                          # the rival readings' shuffled null is the first permutation's
            rival[cond] = spent
        took[cond] = time.perf_counter() - timing
    conditions.update(nulls)
    report["seconds"] = time.perf_counter() - start
    return report
