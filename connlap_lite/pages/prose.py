"""Numbers into words for the chapters' computed paragraphs: one way to say a range, a list and a count.

The empirical chapters write their descriptive paragraphs from the numbers (and glue them into the page),
so that the text cannot go stale; these are the few phrases they share.

>>> span([0.613, 0.8349])
'0.61 to 0.83'
>>> names(["gpt2", "bert", "llama"])
'gpt2, bert and llama'
>>> who(["b"], among=["a", "b", "c"], noun="decoder")
'1 of 3 decoders (b)'
>>> layers_of([3, 4, 7])
'layers 3, 4 and 7'
>>> sizes([22_713_216, 630_167_424])
'23M to 630M parameters'

Chapters: *E1*, *E2*, *E3*, *Known results*, *Beyond E1-E3*, *Scorecard*, *Performance*.
"""
from __future__ import annotations

__all__ = ["span", "names", "count", "who", "tally", "pvalue", "layers_of", "size", "sizes", "measured_at",
           "caches_at_start"]


def span(values, fmt: str = "{:.2f}") -> str:
    """``'0.61 to 0.83'``, or one number when the smallest and the largest round alike.

    >>> span([1.004, 0.998])
    '1.00'
    >>> span([3, 12], fmt="{:d}")
    '3 to 12'
    """
    values = list(values)
    if not values:
        raise ValueError("values must hold at least one number")
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo} to {hi}"


def names(items, empty: str = "none") -> str:
    """``'a'``, ``'a and b'``, ``'a, b and c'``; ``empty`` for none.

    >>> names([]), names(["a"]), names(["a", "b"])
    ('none', 'a', 'a and b')
    """
    items = [str(i) for i in items]
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``plural``, or ``noun + "s"``).

    >>> count(1, "model"), count(3, "small pretrained model"), count(1, "family", "families"), count(0, "verdict")
    ('1 model', '3 small pretrained models', '1 family', '0 verdicts')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def who(members, among, noun: str = "model", listed: bool = True) -> str:
    """How many of ``among`` are in ``members``, in words: ``'every model'``, ``'no decoder'``, ``'the model'``
    (one of one), or ``'2 of 3 decoders (a, b)'`` (without the parenthesis if not ``listed``).

    >>> who(["a", "b"], among=["a", "b"]), who([], among=["a", "b"], noun="decoder")
    ('every model', 'no decoder')
    >>> who(["a"], among=["a", "b", "c"], listed=False)
    '1 of 3 models'
    """
    among = list(among)
    chosen = [m for m in among if m in set(members)]
    if len(chosen) == len(among):
        return f"every {noun}" if len(among) > 1 else f"the {noun}"
    if not chosen:
        return f"no {noun}"
    return f"{len(chosen)} of {len(among)} {noun}s" + (f" ({', '.join(map(str, chosen))})" if listed else "")


def tally(flags, noun: str = "model") -> str:
    """How many of ``flags`` are true, in words, for a list of one flag per model: ``'2 of 4 models'``.

    >>> tally([True, False, True, True]), tally([True, True])
    ('3 of 4 models', 'every model')
    """
    flags = [bool(f) for f in flags]
    return who([i for i, f in enumerate(flags) if f], among=range(len(flags)), noun=noun, listed=False)


def pvalue(p: float) -> str:
    """A p-value as the prose writes it: ``'p = 0.042'``, ``'p < 0.001'``, ``'p undefined'`` (NaN).

    >>> pvalue(0.0416), pvalue(0.0004), pvalue(float("nan"))
    ('p = 0.042', 'p < 0.001', 'p undefined')
    """
    if p != p:
        return "p undefined"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def layers_of(layers) -> str:
    """``'layer 5'`` or ``'layers 3, 4 and 7'``.

    >>> layers_of([5])
    'layer 5'
    """
    layers = [str(int(layer)) for layer in layers]
    if not layers:
        raise ValueError("layers must hold at least one layer index")
    return f"layer {layers[0]}" if len(layers) == 1 else "layers " + names(layers)


def size(parameters: int) -> str:
    """A parameter count as the prose writes it: ``'23M'``, ``'8.0B'``.

    >>> size(124_439_808), size(999_600_000), size(1_557_611_200)
    ('124M', '1.0B', '1.6B')
    """
    return f"{parameters / 1e6:.0f}M" if round(parameters / 1e6) < 1000 else f"{parameters / 1e9:.1f}B"


def sizes(counts) -> str:
    """The range of models' parameter counts: ``'23M to 630M parameters'``.

    >>> sizes([124_439_808])
    '124M parameters'
    """
    counts = list(counts)
    if not counts:
        raise ValueError("counts must hold at least one parameter count")
    lo, hi = size(min(counts)), size(max(counts))
    return f"{lo} parameters" if lo == hi else f"{lo} to {hi} parameters"


def measured_at(record: dict | None) -> str:
    """Where and when a time record (benchmarks/results) was measured, as the performance appendix and the
    teaching page say it beside its numbers: its commit and date, never as if it were the current code's.

    >>> measured_at({"commit": "f5d46831a0", "date_utc": "2026-12-01T11:45:05Z"}), measured_at(None)
    ('measured at f5d4683, 2026-12-01', 'not measured')
    >>> measured_at({"date_utc": "2026-12-01T11:45:05Z"})
    'measured at an unrecorded commit, 2026-12-01'
    """
    if not record:
        return "not measured"
    commit = record.get("commit")
    return f"measured at {commit[:7] if commit else 'an unrecorded commit'}, {record['date_utc'][:10]}"


def caches_at_start(record: dict) -> str:
    """The caches a time record's run started from: ``'pip cache empty, model cache empty, measurement cache
    warm'`` (or an older record's one word for the measurement cache).

    >>> caches_at_start({"cache_at_start": {"pip": "empty", "model": "warm", "measurement": "empty"}})
    'pip cache empty, model cache warm, measurement cache empty'
    >>> caches_at_start({"cache_at_start": "empty"}), caches_at_start({})
    ('measurement cache empty', 'caches not recorded')
    """
    state = record.get("cache_at_start")
    if isinstance(state, dict):
        return ", ".join(f"{k} cache {v}" for k, v in state.items())
    return f"measurement cache {state}" if state else "caches not recorded"
