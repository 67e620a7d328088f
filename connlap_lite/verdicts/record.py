"""The measurement record: its shape, and the read-only :class:`Report` that holds one.

:func:`connlap_lite.measure.analysis.analyze` writes a record by the names here and every rule reads it through
them, so a metric's name, its unit of resampling, its layer separation and its registered nulls are
stated once:

``WALK_METRICS`` ... ``DATA_METRICS``   the metric names, by the kind of quantity;
``UNITS``                                the unit each metric's per-layer list holds (passage, head, edge passage);
``separation(metric)``                   how many layers apart its two walks are (its list has ``layers - k`` entries);
``NULLS``                                the registered nulls of the metrics the rules test, by display name;
``DATA_SEED_KEYS``                       E2's data null, one key per random-init seed's transports;
``RIVAL_METRICS`` ...                    the rival readings' measures (a layer that writes little, the self-loop,
                                         a dominant direction), beside E1 and E2;
``ARCHIVED``                             measurements replaced after results were seen, by the date they were;
``Report``                               a record validated once, read-only.

The reading functions (:func:`values_of`, :func:`layer_means`, :func:`layer_curve`, :func:`depth_trend`,
:func:`late`, :func:`late_value`, :func:`random_nulls`, :func:`matrix`, :func:`archived_view`) take a
:class:`Report` or a plain dict of the same shape (a report read back from JSON): the one way to read a report.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import math

import numpy as np

# ----------------------------------------------------------------------- the names, by kind
WALK_METRICS = ["sink", "uniform_dist", "rev", "rev_nosink", "cross", "cross_nosink", "input_dependence_nosink"]
# Measurements replaced after results were seen, still measured under these keys so that the verdicts they gave can
# be shown beside the new ones (connlap_lite.verdicts.history.MEASUREMENT_CHANGES says which key replaced which, when
# and why): _pre1130 is tv_norm_nosink as measured before 2026-11-30 (sinks fixed at column 0, and the last column
# of an encoder; divided by the distance from the full uniform walk), _pre1201 as measured from then until
# 2026-12-01 (the same sinks; divided by the distance from the sink-free uniform walk); each inner null divided by
# its own pair's distance, as it was then.  The data defects _pre1201 leave out the same fixed sink tokens.
ARCHIVED = {"2026-11-30": ["tv_norm_nosink_pre1130", "cross_passage_tv_norm_nosink_pre1130",
                           "positional_tv_norm_nosink_pre1130"],
            "2026-12-01": ["tv_norm_nosink_pre1201", "cross_passage_tv_norm_nosink_pre1201",
                           "positional_tv_norm_nosink_pre1201", "data_defect_nosink_pre1201",
                           "data_defect_cross_pre1201", "data_defect_gaussian_pre1201"]}
_ARCHIVED = [k for keys in ARCHIVED.values() for k in keys]
STEP_METRICS = ["tv", "tv_norm", "spec", "tv_nosink", "tv_norm_nosink", "spec_nosink",
                "cross_passage_tv_norm_nosink", "positional_tv_norm_nosink",
                "cross_passage_tv_norm", "positional_tv_norm"] + [k for k in _ARCHIVED if "tv_norm" in k]
SEPARATIONS = (2, 3, 4)   # layer l against l + k: sep<k>_tv_norm_nosink has layers - k per-layer lists
SEP_METRICS = [f"sep{k}_tv_norm_nosink" for k in SEPARATIONS]
HEAD_METRICS = ["head_defect", "head_defect_gain", "head_defect_rotation", "head_defect_gaussian", "copy", "overlap"]
# E2's data null: the head transports of the first three random-init seeds on the trained model's own inputs
DATA_SEED_KEYS = ("data_defect_cross", "data_defect_cross_2", "data_defect_cross_3")
DATA_METRICS = (["data_defect", "edge_defect", "data_defect_nosink", *DATA_SEED_KEYS, "data_defect_gaussian"]
                + [k for k in _ARCHIVED if k.startswith("data_")])
# The rival readings (registered 2026-12-04; formulas in connlap_lite.measure.metrics, forwards in connlap_lite.measure.rivals):
# a layer that writes little (its update ratio; the cost of zero- and mean-ablating its update, in the trained
# condition only, on its first analysis.ABLATION_PASSAGES passages: unit "ablation passage"; the random-init seeds
# measure the rival readings in the first analysis.RIVAL_SEEDS of them), the self-loop (sinks set aside; beside the uniform walk's) and
# each output's alignment with its own value (beside uniform attention's), a dominant W_O W_V direction (each head's
# and each measured edge's sigma_1^2 / sum sigma^2, beside the Gaussian and rotated heads'; the states' alignment
# with the layer's top direction, beside a random direction's and the first random-init twin's top direction's).
RIVAL_METRICS = ["update_ratio", "ablation_zero", "ablation_mean", "self_loop_nosink", "self_loop_uniform",
                 "self_alignment", "self_alignment_uniform", "state_alignment", "state_alignment_random",
                 "state_alignment_cross"]
RIVAL_HEAD_METRICS = ["head_dominance", "head_dominance_gaussian", "head_dominance_rotation"]
RIVAL_EDGE_METRICS = ["edge_dominance", "edge_dominance_gaussian", "edge_dominance_rotation"]
# the edge metrics' units: per layer, the EDGES heaviest non-sink edges of each of the first EDGE_PASSAGES passages
EDGES = 4
EDGE_PASSAGES = 4
# metrics with one value per passage in each per-layer list (the rest: per head, or per measured edge passage)
ABLATION_METRICS = ["ablation_zero", "ablation_mean"]
PASSAGE_METRICS = (WALK_METRICS + STEP_METRICS + SEP_METRICS + [m for m in DATA_METRICS if m != "edge_defect"]
                   + [m for m in RIVAL_METRICS if m not in ABLATION_METRICS])
UNITS = {**{m: "passage" for m in PASSAGE_METRICS}, **{m: "head" for m in HEAD_METRICS + RIVAL_HEAD_METRICS},
         **{m: "edge passage" for m in ["edge_defect"] + RIVAL_EDGE_METRICS},
         **{m: "ablation passage" for m in ABLATION_METRICS}}

# The registered nulls of each tested metric: display name -> (condition, key). "random<k>" (every
# random-init seed, the same key) and "shuffled" are whole-model conditions; the rest live in "trained".
# A metric not listed has the random-init seeds and its shuffled passages.
NULLS = {
    "tv_norm_nosink": {"shuffled": ("shuffled", "tv_norm_nosink"),
                       "cross-passage": ("trained", "cross_passage_tv_norm_nosink"),
                       "positional": ("trained", "positional_tv_norm_nosink")},
    "tv_norm": {"shuffled": ("shuffled", "tv_norm"), "cross-passage": ("trained", "cross_passage_tv_norm"),
                "positional": ("trained", "positional_tv_norm")},
    "input_dependence_nosink": {"shuffled": ("shuffled", "input_dependence_nosink")},
    "head_defect": {"Gaussian heads": ("trained", "head_defect_gaussian")},
    "head_defect_gain": {"Gaussian heads": ("trained", "head_defect_gaussian")},
    "data_defect_nosink": {"random-init transports": ("trained", "data_defect_cross"),
                           "Gaussian transports": ("trained", "data_defect_gaussian")},
    # the rival readings (the random-init seeds that measured them, and the shuffled passages, come with them)
    "self_loop_nosink": {"shuffled": ("shuffled", "self_loop_nosink"), "uniform walk": ("trained", "self_loop_uniform")},
    "self_alignment": {"shuffled": ("shuffled", "self_alignment"),
                       "uniform attention": ("trained", "self_alignment_uniform")},
    "head_dominance": {"Gaussian heads": ("trained", "head_dominance_gaussian"),
                       "rotated heads": ("trained", "head_dominance_rotation")},
    "edge_dominance": {"Gaussian heads": ("trained", "edge_dominance_gaussian"),
                       "rotated heads": ("trained", "edge_dominance_rotation")},
    "state_alignment": {"shuffled": ("shuffled", "state_alignment"),
                        "random direction": ("trained", "state_alignment_random"),
                        "random-init direction": ("trained", "state_alignment_cross")},
}
# the null of each tested metric that the random-init seeds give (the same key in every random<k> condition)
SEED_NULL = {"tv_norm_nosink": "tv_norm_nosink", "tv_norm": "tv_norm", "head_defect": "head_defect",
             "head_defect_gain": "head_defect", "input_dependence_nosink": "input_dependence_nosink"}


def separation(metric: str) -> int:
    """How many layers apart a metric's two walks are: 0 per layer, 1 for a step, k for ``sep<k>_...``.

    >>> separation("sink"), separation("tv_norm_nosink"), separation("sep3_tv_norm_nosink")
    (0, 1, 3)
    """
    if metric in STEP_METRICS:
        return 1
    if metric in SEP_METRICS:
        return int(metric[3:metric.index("_")])
    return 0


# ----------------------------------------------------------------------- read-only containers
class _ReadOnly:
    def _refuse(self, *args, **kwargs):
        raise TypeError("a Report is read-only: copy it first (report.to_dict()) to change it")

    __setitem__ = __delitem__ = __iadd__ = __ior__ = _refuse


class _List(_ReadOnly, list):
    """A list that refuses changes (equal to the list it was made from, and JSON-able)."""
    append = extend = insert = pop = remove = clear = sort = reverse = __imul__ = _ReadOnly._refuse

    def __reduce__(self):
        return list, (list(self),)


class _Dict(_ReadOnly, dict):
    """A dict that refuses changes (equal to the dict it was made from, and JSON-able)."""
    update = pop = popitem = clear = setdefault = _ReadOnly._refuse

    def __reduce__(self):
        return dict, (dict(self),)


def _freeze(x):
    if isinstance(x, dict):
        return _Dict({k: _freeze(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return _List(_freeze(v) for v in x)
    return x


def _thaw(x):
    if isinstance(x, dict):
        return {k: _thaw(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_thaw(v) for v in x]
    return x


# ----------------------------------------------------------------------- validation
# the fields of a record that count something: whole numbers, never booleans
COUNTS = ("layers", "passages", "tokens", "heads", "groups", "d", "head_dim")
SIZES = ("parameters", "non_embedding_parameters")      # numbers (the rules that read them check their sign)
# a unit's count, as the record declares it: a metric of that unit holds that many values in each per-layer list
DECLARED = {"passage": "passages", "head": "heads"}


def _number(x) -> bool:
    """A real number as JSON reads one back (a float, or an int), never a boolean or a string."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def problems(record) -> list[str]:
    """Why ``record`` is not a measurement record (an empty list if it is): its shape, checked against itself.

    Every condition's metric must hold ``layers - separation(metric)`` non-empty per-layer lists (when the record
    states its ``layers``), each of real numbers (never booleans, strings or null), and of the length its unit
    declares (:data:`UNITS`): the record's ``passages`` for a per-passage metric, its ``heads`` for a per-head one;
    the lists of any other metric (an edge passage's, or one this table does not know yet) all of one length.  The
    counts the record states (:data:`COUNTS`) must be whole numbers, at least one; its sizes (:data:`SIZES`)
    numbers.

    >>> problems({"model": "m", "layers": 2, "conditions": {"trained": {"sink": [[0.1], [0.2]]}}})
    []
    >>> problems({"model": "m", "layers": 3, "conditions": {"trained": {"sink": [[0.1], [0.2]]}}})
    ['trained/sink holds 2 per-layer lists, not 3']
    >>> problems({"model": "m", "layers": 1, "passages": 16, "conditions": {"trained": {"sink": [[0.1, True]]}}})
    ['trained/sink layer 0 holds 2 values, not the 16 passages the record declares', 'trained/sink layer 0 holds True, not a number']
    """
    if not isinstance(record, dict):
        return [f"it is a {type(record).__name__}, not a dict"]
    conditions, layers = record.get("conditions"), record.get("layers")
    out = [f"its field {k!r} is {record[k]!r}, not a whole number of at least 1" for k in COUNTS
           if k in record and not (isinstance(record[k], int) and not isinstance(record[k], bool) and record[k] >= 1)]
    out += [f"its field {k!r} is {record[k]!r}, not a number" for k in SIZES if k in record and not _number(record[k])]
    if out:
        return out
    if not isinstance(conditions, dict) or not conditions:
        return ["it has no conditions"]
    for cond, values in conditions.items():
        if not isinstance(values, dict):
            out.append(f"condition {cond!r} is a {type(values).__name__}, not a dict of metrics")
            continue
        for metric, per_layer in values.items():
            where = f"{cond}/{metric}"
            if not isinstance(per_layer, list) or not all(isinstance(v, list) and v for v in per_layer):
                out.append(f"{where} is not a list of non-empty per-layer lists")
                continue
            if isinstance(layers, int) and len(per_layer) != layers - separation(metric):
                out.append(f"{where} holds {len(per_layer)} per-layer lists, not {layers - separation(metric)}")
            field = DECLARED.get(UNITS.get(metric))
            want = record.get(field) if field else None
            for layer, v in enumerate(per_layer):
                if want is not None and len(v) != want:
                    out.append(f"{where} layer {layer} holds {len(v)} values, not the {want} {field} the record "
                               "declares")
                elif want is None and len(v) != len(per_layer[0]):
                    out.append(f"{where} layer {layer} holds {len(v)} values, layer 0 {len(per_layer[0])}")
                if not all(map(_number, v)):
                    bad = next(x for x in v if not _number(x))
                    out.append(f"{where} layer {layer} holds {bad!r}, not a number")
                if len(out) > 20:                  # enough to say what is wrong
                    return out
    return out


def nonfinite(record) -> list[tuple[str, str, int]]:
    """Every ``(condition, metric, layer)`` of ``record`` holding a NaN or an infinity.

    >>> nonfinite({"conditions": {"trained": {"tv": [[0.1, 0.2], [float("nan"), 0.3]]}}})
    [('trained', 'tv', 1)]
    """
    out = []
    for cond, values in record["conditions"].items():
        for metric, per_layer in values.items():
            for layer, v in enumerate(per_layer):
                try:
                    bad = not np.isfinite(np.asarray(v, dtype=float)).all()
                except (TypeError, ValueError):
                    bad = True
                if bad:
                    out.append((cond, metric, layer))
    return out


class Report(_Dict):
    """One measurement record, validated once on load and read-only; reads like the dict it was made from.

    ``Report(record)`` checks the shape (:func:`problems`) and raises a ``ValueError`` naming what is wrong (and
    the record, by ``name``: a file, ``reports[2]``); a NaN or an infinity is not refused but listed by name in
    :attr:`nonfinite` (the rules answer "undefined" where they meet one).  Every rule takes its reports as
    Reports (:func:`connlap_lite.verdicts.words.check_reports` makes a plain dict one, so a record is validated once,
    wherever it enters).  ``report["conditions"]["trained"]["sink"]`` reads as before, and the module's functions
    read it (:func:`layer_means`, :func:`layer_curve`, :func:`late_value`, :func:`depth_trend`, :func:`random_nulls`,
    :func:`registered_nulls`, :func:`strongest_null`: the one way to read a report); ``report.to_dict()`` gives a
    plain, changeable copy.

    Examples
    --------
    >>> r = Report({"model": "m", "layers": 3, "conditions": {"trained": {"sink": [[0.2, 0.4], [0.1, 0.3], [0.0, 0.2]],
    ...                                                                    "tv": [[0.5, 0.6], [0.4, 0.4]]}}})
    >>> layer_means(r, "sink").round(2).tolist(), r.nonfinite
    ([0.3, 0.2, 0.1], [])
    >>> r["conditions"]["trained"]["sink"][0] == [0.2, 0.4]
    True
    >>> r["model"] = "other"
    Traceback (most recent call last):
    ...
    TypeError: a Report is read-only: copy it first (report.to_dict()) to change it
    >>> Report({"model": "m", "layers": 2, "conditions": {"trained": {"sink": [[0.2]]}}}, name="m.json")
    Traceback (most recent call last):
    ...
    ValueError: m.json is not a measurement record from connlap_lite.measure.analysis.analyze: trained/sink holds 1 per-layer lists, not 2
    """

    def __init__(self, record, name: str = "record"):
        found = problems(record)
        if found:
            raise ValueError(f"{name} is not a measurement record from connlap_lite.measure.analysis.analyze: "
                             + "; ".join(found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else ""))
        super().__init__(_freeze(dict(record)))
        dict.__setattr__(self, "nonfinite", nonfinite(self))

    def __setattr__(self, name, value):
        self._refuse()

    def to_dict(self) -> dict:
        """A plain, changeable deep copy."""
        return _thaw(self)


# ----------------------------------------------------------------------- reading values
def values_of(report, metric: str, condition: str = "trained", name: str = "report") -> list:
    """``report["conditions"][condition][metric]``, or an error naming what is missing and what is there."""
    if not isinstance(report, dict) or not isinstance(report.get("conditions"), dict):
        raise TypeError(f"{name} must be a report from connlap_lite.measure.analysis.analyze (a dict with 'conditions'), "
                        f"got {type(report).__name__}")
    conditions = report["conditions"]
    if not isinstance(condition, str) or condition not in conditions:
        raise ValueError(f"condition must be one of the report's conditions {sorted(conditions)}, got {condition!r}")
    if not isinstance(metric, str) or metric not in conditions[condition]:
        raise ValueError(f"metric must be one of {sorted(conditions[condition])} (measured in {condition!r}), "
                         f"got {metric!r}; a report made before this metric existed needs "
                         "analyze(..., refresh=True)")
    values = conditions[condition][metric]
    if isinstance(report, Report):                     # its shape was checked once, when it was made
        return values
    if not isinstance(values, list) or not values or not all(isinstance(v, list) and v for v in values):
        raise ValueError(f"{name}'s {condition}/{metric} must be a non-empty list of per-layer lists; the report "
                         "is damaged: recompute it with analyze(..., refresh=True)")
    return values


def layer_means(report, metric: str, condition: str = "trained") -> np.ndarray:
    """One number per layer: the mean over passages (walk and data metrics) or over heads (head metrics).

    >>> layer_means({"conditions": {"trained": {"tv": [[0.2, 0.4], [0.1, 0.3]]}}}, "tv")
    array([0.3, 0.2])
    """
    return np.array([float(np.mean(v)) for v in values_of(report, metric, condition)])


def layer_curve(report, metric: str, condition: str = "trained", *, n_boot: int = 1000):
    """Per-layer mean and 95% bootstrap interval over passages (or heads) of one metric (NaN where undefined)."""
    from ..measure.stats import mean_interval

    means, lo, hi = [], [], []
    for v in values_of(report, metric, condition):    # a layer with an undefined value: NaN, with a warning
        m, a, b = mean_interval(v, n_boot=n_boot)
        means.append(m); lo.append(a); hi.append(b)
    return means, lo, hi


def depth_trend(report, metric: str, condition: str = "trained") -> tuple[float, float]:
    """Spearman's rho of the per-layer mean against depth, and its p-value (layers taken as independent)."""
    from ..measure.stats import spearman

    means = layer_means(report, metric, condition)
    return spearman(range(len(means)), means)


def third(n: int) -> int:
    """How many of ``n`` layers (or steps) make the first or the last third: ``ceil(n / 3)``, at least one.

    Every first-third and last-third comparison of the chapters and the rules counts its layers here.

    >>> [third(n) for n in (1, 2, 3, 4, 6, 12, 16)]
    [1, 1, 1, 2, 2, 4, 6]
    """
    return max(1, math.ceil(n / 3))


def late(values, fraction: float = 1 / 3) -> list:
    """The per-layer lists of the last ``fraction`` of layers (at least one).

    >>> late([[1], [2], [3], [4], [5], [6]])
    [[5], [6]]
    """
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__") or len(values) == 0:
        raise ValueError(f"values must be a non-empty list of per-layer values, got {values!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    k = max(1, math.ceil(len(values) * fraction))
    return list(values[-k:])


def late_value(report, metric: str, condition: str = "trained") -> np.ndarray:
    """Per-passage (or per-head) values of ``metric``, averaged over the late layers."""
    return np.mean(np.array(late(values_of(report, metric, condition)), dtype=float), axis=0)


def random_nulls(report) -> list[str]:
    """The report's random-init conditions, ``random0``, ``random1``, ... in seed order."""
    names = [c for c in report.get("conditions", {}) if c.startswith("random") and c[6:].isdigit()]
    return sorted(names, key=lambda c: int(c[6:]))


def shuffle_names(n: int) -> list[str]:
    """The condition names of ``n`` permutations of the shuffled null: ``"shuffled"`` (the first), then
    ``"shuffled1"``, ...

    >>> shuffle_names(3)
    ['shuffled', 'shuffled1', 'shuffled2']
    """
    return ["shuffled"] + [f"shuffled{p}" for p in range(1, n)]


def shuffled_nulls(report) -> list[str]:
    """The report's shuffled-null permutations, ``shuffled``, ``shuffled1``, ... in order (the rules' units, as the
    random-init seeds are :func:`random_nulls`)."""
    names = [c for c in report.get("conditions", {}) if c == "shuffled" or c.startswith("shuffled") and c[8:].isdigit()]
    return sorted(names, key=lambda c: int(c[8:] or 0))


def matrix(report, metric: str, condition: str = "trained") -> np.ndarray:
    """``(layers, units)``: the per-layer lists as one array (every layer must have the same units)."""
    values = values_of(report, metric, condition)
    if len({len(v) for v in values}) != 1:
        raise ValueError(f"{condition}/{metric} has per-layer lists of different lengths; the report is damaged")
    return np.array(values, dtype=float)


def registered_nulls(report, metric: str) -> dict[str, np.ndarray]:
    """The registered nulls of ``metric`` (:data:`NULLS`) that ``report`` holds, as ``(layers, units)`` arrays,
    each random-init seed by its condition name first."""
    c = report["conditions"]
    seed_key = SEED_NULL.get(metric, metric)
    out = {s: matrix(report, seed_key, s) for s in random_nulls(report) if seed_key in c[s]}
    registered = NULLS.get(metric, {"shuffled": ("shuffled", metric)})   # every metric: its shuffled passages
    for name, (cond, key) in registered.items():
        if cond in c and key in c[cond]:
            out[name] = matrix(report, key, cond)
    return out


def archived_view(report, keys: dict[str, str]) -> dict:
    """``report`` as it would have been measured before a change: in every condition each key of ``keys``
    (``{current key: archived key}``, :data:`ARCHIVED`) reads its archived values; a condition without the
    archived key loses the current one too (never a mix of the two measurements).

    >>> r = {"model": "m", "conditions": {"trained": {"tv": [[0.1]], "tv_old": [[0.3]]}, "random0": {"tv": [[0.2]]}}}
    >>> archived_view(r, {"tv": "tv_old"})["conditions"]
    {'trained': {'tv': [[0.3]], 'tv_old': [[0.3]]}, 'random0': {}}
    """
    out = {k: v for k, v in report.items() if k != "conditions"}
    out["conditions"] = {}
    for cond, values in report["conditions"].items():
        view = dict(values)
        for current, old in keys.items():
            if old in values:
                view[current] = values[old]
            else:
                view.pop(current, None)
        out["conditions"][cond] = view
    return out


def strongest_null(report, metric: str, *, seeds: bool = False) -> str:
    """The registered null of ``metric`` with the lowest late mean (the hardest to beat, smaller = more of the
    claim); the random-init seeds are candidates only with ``seeds``."""
    nulls = {n: v for n, v in registered_nulls(report, metric).items() if seeds or not n.startswith("random")}
    if not nulls:
        raise ValueError(f"report on {report.get('model')!r} holds no registered null of {metric!r} "
                         f"(registered: {sorted(NULLS.get(metric, {}))})")
    return min(nulls, key=lambda n: float(np.mean(late(list(nulls[n])))))
