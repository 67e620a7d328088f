"""What a computed paragraph says, read without its wording: the facts that ``tests/pages/test_findings.py`` asserts.

The chapters' paragraphs (:mod:`connlap_lite.pages.findings`) are written from numbers. The tests assert those
numbers, counts, verdict words and names through :func:`facts` (of a paragraph, or of one :func:`sentence` or
:func:`clause` of it), and the wording once per chapter, in a snapshot under ``tests/pages/snapshots/``: a copy edit
changes one snapshot, not the tests.
"""
from __future__ import annotations

import re

from connlap_lite.known.statements import KNOWN_VERDICTS as KNOWN_WORDS
from connlap_lite.verdicts.record import UNITS
from connlap_lite.verdicts.words import VERDICTS as WORDS

__all__ = ["facts", "count", "sentences", "sentence", "clause", "WORDS", "KNOWN_WORDS", "MODELS"]

# the synthetic reports' model names that no English word shares (a test names a one-letter model itself)
MODELS = ("enc", "dec-a", "dec-b", "dec-r", "dec", "q0", "q1", "q2")
METRICS = tuple(UNITS)          # every metric identifier a report holds

_COUNT = re.compile(r"(?<![\w./,])(\d+) of (?:the |those |its )?(\d+)(?!\w)(?![.,-]\d)")   # not "4 of 2026-12-04"
_EMPHASIS = re.compile(r"(?<!\*)\*{1,2}([^*\n]+?)\*{1,2}(?!\*)")
_QUANTIFIER = re.compile(r"\b(every|no) (model|decoder|encoder)\b")
_NUMBER = re.compile(
    r"(?P<date>\b\d{4}-\d{2}-\d{2}(?:T[\d:]+Z?)?)"                                  # 2026-12-04, ...T03:04:05Z
    r"|(?P<latex>(?<![\w.])\d+(?:\.\d+)? \\times 10\^\{[-+]?\d+\})"                 # 3.0 \times 10^{-7}
    r"|(?P<power>(?<![\w.{])10\^\{[-+]?\d+\})"                                      # 10^{-10}
    r"|(?P<number>(?<![\w.\-+/−{^])(?:(?<![\w)\]])[-+−])?"                          # a sign, not a hyphen
    r"\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?(?:%|[MBx](?!\w)|/\d+(?![\w.]))?"    # 10%, 130M, 12.0x, 1/3
    r"(?![\w]|\.\d))")                                                                # not 2d in d_h / 2d


def _written(m: re.Match) -> str:
    """A number as written; LaTeX's ``3.0 \\times 10^{-7}`` as ``3.0e-7`` and ``10^{-10}`` as ``1e-10``."""
    if m.group("latex"):
        mantissa, exponent = re.fullmatch(r"(\S+) \\times 10\^\{(\S+)\}", m.group()).groups()
        return f"{mantissa}e{exponent}"
    if m.group("power"):
        return "1e" + m.group()[4:-1]
    return m.group().replace("−", "-")


def _words(text: str, vocabulary) -> list[str]:
    """Every occurrence of a word or phrase of ``vocabulary`` in ``text``, in order, the longest first where two
    start alike; read whole (``dec`` is not read in ``dec-a``, nor ``holds`` in ``upholds``)."""
    if not vocabulary:
        return []
    alternatives = "|".join(re.escape(w) for w in sorted(vocabulary, key=len, reverse=True))
    return [m.group(1) for m in re.finditer(rf"(?<![\w-])({alternatives})(?![\w-])", text)]


def _emphasized(text: str, vocabulary) -> list[str]:
    """The words of ``vocabulary`` that open a span set in italics or bold, in order."""
    return [w for span in _EMPHASIS.findall(text) for w in _words(span, vocabulary)[:1] if span.startswith(w)]


def facts(text: str, models=MODELS, words=WORDS, metrics=METRICS) -> dict:
    """What ``text`` says, each kind in the order written:

    ``numbers``   every number as written: integers, decimals, signed (``+0.150``), percentages (``10%``), sizes
                  (``130M``), fractions (``1/3``), thousands (``65,536``), dates (``2026-12-04``), scientific
                  (``1e-10``; LaTeX's ``3.0 \\times 10^{-7}`` as ``3.0e-7``); a count ``k of n`` as the pair
                  ``(k, n)``.  Digits inside a name (``E1``, ``Gemma-3``, ``gpt_8b``) or a formula (``2d``) are
                  not numbers, and of a range written with a hyphen (``16-34%``) only the first number is read;
    ``counts``    the counts alone: the pairs, and ``"every"`` or ``"no"`` for *every model*, *no decoder*
                  (:func:`count` gives the one a test should expect);
    ``verdicts``  the words of ``words`` used (the rules' vocabulary, :data:`connlap_lite.verdicts.words.VERDICTS`;
                  pass :data:`KNOWN_WORDS` for the known results'), prose included ("which holds");
    ``emphasized`` those set in italics or bold, as the chapters mark a verdict (``*holds*``, ``**partly (falls)**``);
    ``models``    the names of ``models`` used; ``metrics``: the metric identifiers (the keys of
                  :data:`connlap_lite.verdicts.record.UNITS`) written as code or with an underscore (``sink``
                  alone is a word).

    >>> said = facts("E1 *holds* on enc and dec-a: closer than any null in 2 of 3 models (margin +0.150, "
    ...              "`tv_norm_nosink`, 10% below); *does not hold* on dec-b in no model.")
    >>> said["numbers"], said["counts"], said["verdicts"]
    ([(2, 3), '+0.150', '10%'], [(2, 3), 'no'], ['holds', 'does not hold'])
    >>> said["models"], said["metrics"]
    (['enc', 'dec-a', 'dec-b'], ['tv_norm_nosink'])
    >>> facts("the draw that holds the passages: *holds*; **does not hold (late)**")["emphasized"]
    ['holds', 'does not hold']
    >>> facts("misses by $3.0 \\\\times 10^{-7}$ on 2026-12-04, Gemma-3 at 1/3, 65,536 tokens")["numbers"]
    ['3.0e-7', '2026-12-04', '1/3', '65,536']
    """
    found, taken = [], []
    for m in _COUNT.finditer(text):
        found.append((m.start(), (int(m.group(1)), int(m.group(2)))))
        taken.append(range(m.start(), m.end()))
    for m in _NUMBER.finditer(text):
        if not any(m.start() in span for span in taken):
            found.append((m.start(), _written(m)))
    found.sort(key=lambda x: x[0])
    counts = [(at, n) for at, n in found if isinstance(n, tuple)]
    counts += [(m.start(), m.group(1)) for m in _QUANTIFIER.finditer(text)]
    code = set(re.findall(r"`([^`]+)`", text))
    return {"numbers": [n for _, n in found], "counts": [c for _, c in sorted(counts, key=lambda x: x[0])],
            "verdicts": _words(text, words), "emphasized": _emphasized(text, words), "models": _words(text, models),
            "metrics": [m for m in _words(text, metrics) if "_" in m or m in code]}


def count(k: int, n: int):
    """The count a paragraph should say for ``k`` of ``n`` models, as :func:`facts` reads it: ``"every"``, ``"no"``
    or the pair (:func:`connlap_lite.pages.prose.who`'s words).

    >>> count(2, 2), count(0, 3), count(2, 3)
    ('every', 'no', (2, 3))
    """
    return "every" if k == n else "no" if k == 0 else (k, n)


def _split(text: str, stops: str) -> list[str]:
    """``text`` cut after each of ``stops`` that is followed by white space and stands outside parentheses, and at
    each blank line."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth = depth + 1 if ch == "(" else max(depth - 1, 0) if ch == ")" else depth
        if ((ch in stops and depth == 0 and (i + 1 == len(text) or text[i + 1].isspace()))
                or text.startswith("\n\n", i)):
            parts.append(text[start:i + 1])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: cut at a full stop before white space (not inside parentheses) and at blank lines.

    >>> sentences("On enc it falls (by 0.5. or so). On dec-a it rises.\\n\\n- a list item")
    ['On enc it falls (by 0.5. or so).', 'On dec-a it rises.', '- a list item']
    """
    return _split(text, ".")


def _one(parts: list[str], marks: tuple[str, ...], text: str) -> str:
    found = [p for p in parts if all(re.search(rf"(?<![\w-]){re.escape(m)}(?![\w-])", p) for m in marks)]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} parts hold {marks}, not one: {text!r}")
    return found[0]


def sentence(text: str, *marks: str) -> str:
    """The one sentence of ``text`` that holds every one of ``marks`` (a model, a metric, a number, a term), read
    whole; an error if none does or more than one.

    >>> sentence("On enc it falls; on dec-a it rises. Both in 2 of 3 models.", "dec-a")
    'On enc it falls; on dec-a it rises.'
    """
    return _one(sentences(text), marks, text)


def clause(text: str, *marks: str) -> str:
    """As :func:`sentence`, of the clauses: the sentences cut at their semicolons too (outside parentheses).

    >>> clause("On enc it falls; on dec-a it rises. Both in 2 of 3 models.", "dec-a")
    'on dec-a it rises.'
    """
    return _one(_split(text, ".;"), marks, text)
