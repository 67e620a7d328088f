"""The verdict vocabulary and how one claim's table of p-values becomes verdicts (shared by every rule).

``VERDICTS``                     every word a rule may answer;
``combine(a, b)``                two conditions' flags into holds / partly / does not hold;
``decide(rows, conditions)``     a table's p-values Holm-corrected as one family, its resolution checked;
``data_status(report)``          "insufficient data" below ``MIN_PASSAGES`` passages or ``MIN_SEEDS`` seeds;
``check_report(report)``         a :class:`~connlap_lite.verdicts.record.Report` with what the rules read, or an error naming
                                 what is wrong; ``check_reports`` for a list.

"undefined" is the answer wherever a value a rule reads is NaN or infinite: an undefined number is
never a win and never a verdict.  "not comparable" is the scorecard's answer for a corpus measured
against other nulls than the main one (:func:`connlap_lite.verdicts.scorecard.by_corpus`).

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import math

from .record import Report
from ..measure.stats import check_resolution, holm

VERDICTS = ("holds", "partly", "does not hold", "inconclusive", "not testable", "insufficient data", "undefined",
            "not comparable")
ALPHA = 0.05
# Below these a rule answers "insufficient data": with 8 passages a paired bootstrap has a size within a
# point of alpha (tests/verdicts/test_rules.py measures it); with 3 seeds the seed test has 2 degrees of freedom.
MIN_PASSAGES = 8
MIN_SEEDS = 3


def combine(a, b) -> str:
    """Two conditions' flags into a verdict; a flag that is None (undefined) makes the verdict "undefined".

    >>> combine(True, True), combine(True, False), combine(False, False), combine(None, True)
    ('holds', 'partly', 'does not hold', 'undefined')
    """
    if a is None or b is None:
        return "undefined"
    return "holds" if a and b else ("partly" if a or b else "does not hold")


def flag(p: float, alpha: float = ALPHA):
    """``p < alpha``, or None where ``p`` is undefined."""
    return None if p is None or not math.isfinite(p) else bool(p < alpha)


def data_status(report, seeds: int | None = None) -> str | None:
    """"insufficient data" if ``report`` has fewer than :data:`MIN_PASSAGES` passages or (where ``seeds`` is
    given, the random-init seeds a rule compares with) fewer than :data:`MIN_SEEDS`; else None.

    >>> data_status({"passages": 3}), data_status({"passages": 16}, seeds=1), data_status({"passages": 16}, seeds=5)
    ('insufficient data', 'insufficient data', None)
    """
    passages = report.get("passages")
    if isinstance(passages, int) and passages < MIN_PASSAGES:
        return "insufficient data"
    if seeds is not None and seeds < MIN_SEEDS:
        return "insufficient data"
    return None


def decide(rows: list[dict], *conditions: tuple[str, str], n_boot: int | None = None) -> list[dict]:
    """A claim's table decided: every row's p-values (``(p_key, flag_key)`` per condition) Holm-corrected as
    one family into ``<p_key>_holm``, each flag set where that is below ``ALPHA`` (None where undefined),
    and the verdict from the two flags.  A row that already carries a verdict (``"insufficient data"``,
    ``"undefined"``) keeps it; an undefined row's flags are None.  ``n_boot``: the bootstrap draws behind
    the p-values; a family they cannot resolve
    (``family / (n_boot + 1) >= ALPHA``) is refused (:func:`connlap_lite.measure.stats.check_resolution`).
    """
    family = [r[p] for r in rows for p, _ in conditions]
    if n_boot is not None:
        check_resolution(len(family), n_boot, ALPHA)
    adjusted = iter(holm(family))
    for r in rows:
        for p, key in conditions:
            r[p + "_holm"] = next(adjusted)
            r[key] = None if r.get("verdict") == "undefined" else flag(r[p + "_holm"])
        if r.get("verdict") is None:
            r["verdict"] = combine(*(r[key] for _, key in conditions))
    return rows


def check_report(report, name: str = "report", need=("model",)) -> Report:
    """``report`` as a :class:`~connlap_lite.verdicts.record.Report` with a trained condition and the keys ``need``; or an
    error naming it (``name``: its place in a list, or the file it was read from) and what is wrong with it.

    A Report is taken as it is (validated when it was made); any other record is made one here, which checks its
    shape and raises its problems by name (:func:`connlap_lite.verdicts.record.problems`).

    >>> check_report({"model": "m", "layers": 3, "conditions": {"trained": {"sink": [[0.1], [0.2]]}}}, "m.json")
    Traceback (most recent call last):
    ...
    ValueError: m.json is not a measurement record from connlap_lite.measure.analysis.analyze: trained/sink holds 2 per-layer lists, not 3
    """
    if not isinstance(report, dict) or not isinstance(report.get("conditions"), dict):
        raise TypeError(f"{name} must be a report from connlap_lite.measure.analysis.analyze (a dict with 'conditions'), "
                        f"got {type(report).__name__}")
    if not isinstance(report, Report):
        report = Report(report, name=name)
    missing = [k for k in need if k not in report]
    if missing:
        raise ValueError(f"{name} lacks {missing}: pass reports made by connlap_lite.measure.analysis.analyze")
    if "trained" not in report["conditions"]:
        raise ValueError(f"{name} has no 'trained' condition (conditions: {sorted(report['conditions'])}); the "
                         "rules compare a trained model with its nulls: analyze without random_init")
    return report


def check_reports(reports, name: str = "reports", need=("model",)) -> list[Report]:
    """``reports`` as a list of :class:`~connlap_lite.verdicts.record.Report`, each checked by :func:`check_report` (and
    named by its place, ``reports[2]``); or an error naming what is wrong.

    >>> check_reports([{"model": "m", "layers": 3, "conditions": {"trained": {"sink": [[0.1], [0.2]]}}}])
    Traceback (most recent call last):
    ...
    ValueError: reports[0] is not a measurement record from connlap_lite.measure.analysis.analyze: trained/sink holds 2 per-layer lists, not 3
    """
    if isinstance(reports, (dict, str, bytes)) or not hasattr(reports, "__iter__"):
        raise TypeError(f"{name} must be a list of reports from analyze, got {type(reports).__name__}; "
                        "wrap a single report: [report]")
    reports = list(reports)
    if not reports:
        raise ValueError(f"{name} is empty: pass at least one report from connlap_lite.measure.analysis.analyze")
    return [check_report(r, f"{name}[{i}]", need) for i, r in enumerate(reports)]
