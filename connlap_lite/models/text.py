"""Real text, cut into token passages: three corpora of different kinds, shipped with the package.

``pydoc``      technical prose: the documentation topics of CPython 3.11.7's ``pydoc_data.topics``
               (79 texts, about 465,000 characters);
``stdlib``     source code: every third top-level module of CPython 3.11.7's standard library (56 files,
               about 1.5 million characters);
``narrative``  literary prose: Jane Austen's six completed novels (about 4 million characters).

The texts live in ``connlap_lite/models/corpora/`` (compressed, 1.5 MB), fixed once and identified by their digest
(:func:`corpus_digest`), so every Python, Colab's included, cuts the same passages; ``corpora.json`` there
states each one's source, release and licence (:func:`corpus_card`), and ``tools/corpora.py`` built them.
A passage never crosses from one text (a topic, a file, a novel) into the next.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import random
import weakref
from functools import lru_cache
from importlib import resources

import torch


def check_texts(texts, name: str = "texts") -> list[str]:
    """``texts`` as a non-empty list of non-empty strings, or an error naming ``name``.

    A single string is refused rather than split into its characters.

    Examples
    --------
    >>> check_texts(["a walk", "a connection"])
    ['a walk', 'a connection']
    >>> check_texts("a walk")
    Traceback (most recent call last):
    ...
    TypeError: texts must be a list of strings, got one string; wrap it: ["..."]
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of strings, got one string; wrap it: [\"...\"]")
    if isinstance(texts, dict) or not hasattr(texts, "__iter__"):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}")
    texts = list(texts)
    if not texts:
        raise ValueError(f"{name} must hold at least one string, got an empty list")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{name} must hold only strings; entry {bad[0]} is a {type(texts[bad[0]]).__name__}")
    if not any(t.strip() for t in texts):
        raise ValueError(f"{name} holds only empty strings; pass some text")
    return texts


def default_texts() -> list[str]:
    """The texts of the main corpus, ``pydoc`` (:func:`corpus`)."""
    return corpus("pydoc")


CORPORA = ("pydoc", "stdlib", "narrative")


def check_corpus(name) -> str:
    """``name`` if it is one of :data:`CORPORA`, else an error listing them.

    >>> check_corpus("stdlib")
    'stdlib'
    >>> check_corpus("bible")
    Traceback (most recent call last):
    ...
    ValueError: corpus must be one of ('pydoc', 'stdlib', 'narrative'), got 'bible'
    """
    if not isinstance(name, str) or name not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {name!r}")
    return name


def _digest(works) -> str:
    h = hashlib.sha256()
    for title, text in works:
        h.update(title.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def sources() -> dict:
    """``corpora.json``: each corpus's title, kind, source, release, licence, size and digest."""
    return json.loads(resources.files(__package__).joinpath("corpora", "corpora.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def works(name: str = "pydoc") -> tuple[tuple[str, str], ...]:
    """Corpus ``name``'s ``(title, text)`` pairs, read from the package data and checked against its digest.

    >>> [title for title, _ in works("narrative")][:2]
    ['Emma', 'Mansfield Park']
    """
    path = resources.files(__package__).joinpath("corpora", f"{check_corpus(name)}.json.xz")
    pairs = tuple((title, text) for title, text in json.loads(lzma.decompress(path.read_bytes()))["texts"])
    expected = sources()[name]["digest"]
    if _digest(pairs) != expected:
        raise RuntimeError(f"corpus {name!r} ({path}) does not match its digest {expected}: the package data is "
                           "damaged; reinstall connlap-lite (pip install --force-reinstall connlap-lite)")
    return pairs


def corpus(name: str = "pydoc") -> list[str]:
    """The texts of corpus ``name`` (one of :data:`CORPORA`), in a fixed order: one per topic, file or novel.

    >>> texts = corpus("stdlib")
    >>> len(texts), all(t.strip() for t in texts)
    (56, True)
    """
    return [text for _, text in works(name)]


def corpus_digest(name: str = "pydoc") -> str:
    """The short sha256 of corpus ``name``'s titles and texts, as ``corpora.json`` records it.

    It names the passages' source on the chapters' pages and keys the cached measurements.

    >>> d = corpus_digest("pydoc")
    >>> len(d), d == corpus_digest("pydoc") != corpus_digest("stdlib")
    (16, True)
    """
    works(name)                                     # (checks the data against the digest)
    return sources()[name]["digest"]


def corpus_card(name: str) -> str:
    """A short markdown description of corpus ``name``: what it is, its source, release, licence and digest.

    >>> print(corpus_card("narrative").splitlines()[0])
    **narrative** (narrative prose): Jane Austen's six completed novels, 6 texts, 4,024,595 characters.
    """
    s = sources()[check_corpus(name)]
    return (f"**{name}** ({s['kind']}): {s['title']}, {s['texts']} texts, {s['characters']:,} characters.\n"
            f"Source: {s['source']}. Release: {s['release']}. Licence: {s['licence']}. "
            f"Digest: `{corpus_digest(name)}`.")


def _check_tokenizer(tokenizer) -> None:
    if not callable(tokenizer) or not hasattr(tokenizer, "pad_token"):
        raise TypeError(f"tokenizer must be a Hugging Face tokenizer (the second value load_model returns), "
                        f"got {type(tokenizer).__name__}")


def _specials(tokenizer) -> tuple[list[int], list[int]]:
    """The special ids a tokenizer puts before and after a text (e.g. [CLS] ... [SEP], <bos>)."""
    body = tokenizer("walk", add_special_tokens=False)["input_ids"]
    full = tokenizer("walk", add_special_tokens=True)["input_ids"]
    for k in range(len(full) - len(body) + 1):
        if full[k:k + len(body)] == body:
            return full[:k], full[k + len(body):]
    return [], []


MIN_TOKENS = 8     # the shortest passage any measurement reads: a BOS, a few tokens, room for the sink columns


def check_sizes(n_passages, n_tokens, *, least: int = 2) -> tuple[int, int]:
    """``(n_passages, n_tokens)`` as ints, or the error that names the one out of range: the one check of a
    measurement's sizes, where they enter (:func:`connlap_lite.measure.analysis.analyze`, :func:`connlap_lite.known.known_results`,
    the command line, which names them ``--passages`` and ``--tokens``). ``least`` passages: 2 where bootstrap
    intervals and cross-passage distances pair them, 1 for a check of the walk alone.

    >>> check_sizes(16, 128)
    (16, 128)
    >>> check_sizes(1, 128)
    Traceback (most recent call last):
    ...
    ValueError: n_passages must be at least 2, got 1 (bootstrap intervals and cross-passage distances need two)
    """
    from .._backend import check_int

    why = "bootstrap intervals and cross-passage distances need two" if least == 2 else ""
    return (check_int(n_passages, "n_passages", low=least, why=why),
            check_int(n_tokens, "n_tokens", low=MIN_TOKENS))


def check_bos(bos) -> bool | None:
    """``bos`` itself if it is True, False or None (the tokenizer's default); a clear error otherwise."""
    if bos is not None and not isinstance(bos, bool):
        raise TypeError(f"bos must be True, False or None (the tokenizer's default), got {bos!r}")
    return bos


def _with_bos(tokenizer, pre: list[int], post: list[int], bos) -> tuple[list[int], list[int]]:
    """The special ids before and after a passage with the BOS token put first (``bos=True``) or left out."""
    if check_bos(bos) is None:
        return pre, post
    token = getattr(tokenizer, "bos_token_id", None)
    if token is None:
        raise ValueError(f"bos={bos} but this tokenizer has no beginning-of-sequence token; pass bos=None")
    rest = [t for t in pre if t != token]
    return ([token] + rest if bos else rest), post


SPLITS = ("exploratory", "confirmation")

# The exploratory draws: (passages, tokens) at seed 0, every size a chapter or test measured before the rules were
# frozen (make test's 8 x 64, make book's 32 x 128, the known results' 16 x 64, the long-context 8 x 640 and
# 3 x 576, the reading chapter's 2 x 64 and the explorers' 4 x 32), and make book's 32 x 64 since 2026-12-05 (at
# 32 x 128 its four main reports alone took 1794 s of measurement, a quarter of the hour's two cores, and the
# build measures about twenty more; added before any confirmation of the full build was measured). The confirmation split leaves out every window
# that touches one of them.
EXPLORATORY = ((8, 64), (32, 128), (16, 64), (8, 640), (3, 576), (2, 64), (4, 32), (32, 64))


def check_split(split) -> str:
    """``split`` if it is one of :data:`SPLITS`, else an error listing them.

    >>> check_split("confirmation")
    'confirmation'
    >>> check_split("test")
    Traceback (most recent call last):
    ...
    ValueError: split must be one of ('exploratory', 'confirmation'), got 'test'
    """
    if not isinstance(split, str) or split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def passage_fields(texts=None, corpus: str = "pydoc", bos=None, split: str = "exploratory") -> dict:
    """Which passages a measurement reads, checked where they enter, as the fields of its cache key:
    ``texts``, ``corpus`` (``"texts"`` when texts are given) and its ``corpus_digest`` (None for given texts), and
    ``bos`` and ``split`` only where they are not the defaults (so that the keys of earlier reports hold). Both
    pipelines key their caches by it (:func:`connlap_lite.measure.analysis.analyze`,
    :func:`connlap_lite.known.known_results`) and cut their batch from it (:func:`passages_with_windows`).

    >>> passage_fields(corpus="stdlib", split="confirmation")["corpus"], passage_fields(["a text"])["corpus_digest"]
    ('stdlib', None)
    """
    if texts is None:
        check_corpus(corpus)
    else:
        texts, corpus = check_texts(texts), "texts"
    out = {"texts": texts, "corpus": corpus, "corpus_digest": corpus_digest(corpus) if texts is None else None}
    if check_bos(bos) is not None:                  # (absent when None: the tokenizer's habit, the key's default)
        out["bos"] = bos
    if check_split(split) != "exploratory":         # (absent for the exploratory passages: the key's default)
        out["split"] = split
    return out


_IDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _token_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    """Every text's token ids (no special tokens); the last two lists of texts per tokenizer are kept, so that
    drawing several sizes or splits from one corpus tokenises it once (a corpus of 4 million characters takes
    seconds)."""
    key = tuple(texts)
    try:
        held = _IDS.setdefault(tokenizer, {})
    except TypeError:                               # (a tokenizer that takes no weak reference: not kept)
        held = {}
    if key not in held:
        while len(held) >= 2:
            held.pop(next(iter(held)))
        held[key] = [tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"] for t in texts]
    return held[key]


def _every(ids, body: int) -> list[tuple[int, int]]:
    """Every non-overlapping window ``(text index, first token)`` of ``body`` tokens, text by text."""
    return [(i, k) for i, doc in enumerate(ids) for k in range(0, len(doc) - body + 1, body)]


def _explored(ids, pre_post: int) -> dict[int, list[tuple[int, int]]]:
    """Per text, the token spans ``[start, end)`` of every :data:`EXPLORATORY` draw, widened by one token each side
    (a BOS put first or left out shifts a window's end by one token)."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for n, tokens in EXPLORATORY:
        body = tokens - pre_post
        every = _every(ids, body)
        if body < 2 or len(every) < n:
            continue
        for s in random.Random(0).sample(range(len(every)), n):
            i, k = every[s]
            spans.setdefault(i, []).append((k - 1, k + body + 1))
    return spans


def _confirmation(ids, every, body: int, pre_post: int) -> list[tuple[int, int]]:
    """The windows of ``every`` that touch no exploratory window (:data:`EXPLORATORY`)."""
    spans = _explored(ids, pre_post)
    return [(i, k) for i, k in every if all(k + body <= a or k >= b for a, b in spans.get(i, ()))]


def _cut(tokenizer, n_passages: int, n_tokens: int, seed: int, texts, corpus: str, split: str = "exploratory"):
    """The chosen windows ``[(text index, first token), ...]``, every text's token ids, and the window length: the
    windows are cut for the tokenizer's own special tokens, so that they do not move when ``bos`` is toggled.
    ``split="confirmation"`` draws only among the windows that no exploratory draw touches."""
    from .._backend import check_int

    _check_tokenizer(tokenizer)
    if isinstance(n_passages, bool) or not isinstance(n_passages, int) or n_passages < 1:
        raise ValueError(f"n_passages must be a positive int, got {n_passages!r}")
    pre, post = _specials(tokenizer)
    check_int(n_tokens, "n_tokens")
    body = n_tokens - len(pre) - len(post)
    if body < 2:
        raise ValueError(f"n_tokens must be an int of at least {len(pre) + len(post) + 2}, got {n_tokens!r}")
    check_int(seed, "seed")
    check_split(split)
    texts = [text for _, text in works(corpus)] if texts is None else check_texts(texts)
    ids = _token_ids(tokenizer, texts)
    every = _every(ids, body)
    if split == "confirmation":
        every = _confirmation(ids, every, body, len(pre) + len(post))
    if len(every) < n_passages:
        which = " outside the exploratory passages" if split == "confirmation" else ""
        raise ValueError(f"the texts give only {len(every)} passages of {n_tokens} tokens{which} (a passage lies "
                         f"within one text), asked for {n_passages}; pass more or longer texts or ask for fewer or "
                         "shorter passages")
    chosen = [every[s] for s in sorted(random.Random(seed).sample(range(len(every)), n_passages))]
    return chosen, ids, body


def windows(tokenizer, n_passages: int = 16, n_tokens: int = 128, *, seed: int = 0,
            texts: list[str] | None = None, corpus: str = "pydoc",
            split: str = "exploratory") -> list[tuple[int, int]]:
    """Which text span each passage of :func:`passages` is: ``[(text index, first token of its window), ...]``.

    The same for every ``bos``: the windows are cut for the tokenizer's own special tokens, and toggling
    the BOS token changes only the row's edge (see :func:`passages`).  The reports store it, so that an
    ablation can be paired with the passages of the registered measurement
    (:func:`connlap_lite.verdicts.rules.substitute` refuses others).

    ``split="confirmation"`` draws the confirmation split instead: windows that overlap no window of any
    exploratory draw (:data:`EXPLORATORY`, the sizes the chapters and tests measured at seed 0, with a token's
    margin for the BOS shift), for this tokenizer; ``seed`` then picks among those
    (:data:`connlap_lite.verdicts.rules.CONFIRMATION_SEED` in the book).

    Chapter: *Replication scorecard*.
    """
    return _cut(tokenizer, n_passages, n_tokens, seed, texts, corpus, split)[0]


def passages(tokenizer, n_passages: int = 16, n_tokens: int = 128, *, seed: int = 0,
             texts: list[str] | None = None, corpus: str = "pydoc", bos: bool | None = None,
             split: str = "exploratory") -> dict:
    """A batch of ``n_passages`` passages of exactly ``n_tokens`` tokens each.

    The texts (``texts``, or else corpus ``corpus`` of :data:`CORPORA`) are tokenised one by one and each
    is cut into non-overlapping windows, so that a passage lies within one text (one topic, source file or
    novel of a corpus) and never joins the end of one to the start of the next; a text shorter than one
    window gives none. ``seed`` picks which windows (:func:`windows`). The tokenizer's own special tokens
    ([CLS]/[SEP], <bos>) are kept and counted in ``n_tokens``.
    ``bos`` overrides the tokenizer's habit for the beginning-of-sequence token: True puts it
    first (if the tokenizer does not already), False leaves it out, None does what the tokenizer does.
    The windows do not move with ``bos``: each passage is the same text span, its row starting at the same
    token; a BOS put first takes the place of the window's last token, and a BOS left out frees one place,
    filled with the token after the window (before it, where the text ends there).
    ``split`` picks the exploratory passages (the default) or the confirmation split (:func:`windows`).
    Returns ``{"input_ids": (B, n), "attention_mask": (B, n)}``.

    Chapter: *Reading a real transformer as a connection walk*.
    """
    return passages_with_windows(tokenizer, n_passages, n_tokens, seed=seed, texts=texts, corpus=corpus, bos=bos,
                                 split=split)[0]


def passages_with_windows(tokenizer, n_passages: int = 16, n_tokens: int = 128, *, seed: int = 0,
                          texts: list[str] | None = None, corpus: str = "pydoc",
                          bos: bool | None = None, split: str = "exploratory") -> tuple[dict, list[tuple[int, int]]]:
    """:func:`passages` and :func:`windows` from one tokenisation of the texts."""
    chosen, ids, _ = _cut(tokenizer, n_passages, n_tokens, seed, texts, corpus, split)
    pre, post = _with_bos(tokenizer, *_specials(tokenizer), bos)
    body = n_tokens - len(pre) - len(post)
    if body < 2:
        raise ValueError(f"n_tokens must be an int of at least {len(pre) + len(post) + 2} with bos={bos}, got "
                         f"{n_tokens!r}")
    rows = []
    for i, k in chosen:
        if len(ids[i]) < body:
            raise ValueError(f"text {i} has {len(ids[i])} tokens, fewer than the {body} a passage needs with "
                             f"bos={bos}; pass longer texts or bos=None")
        start = min(k, len(ids[i]) - body)          # (the window's own start, unless the text ends right after it)
        rows.append(pre + ids[i][start:start + body] + post)
    input_ids = torch.tensor(rows, dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}, chosen


def encode(tokenizer, texts: list[str], max_tokens: int = 128) -> dict:
    """Your own texts as one right-padded batch (each truncated to ``max_tokens``)."""
    from .._backend import check_int

    _check_tokenizer(tokenizer)
    texts = check_texts(texts)
    check_int(max_tokens, "max_tokens", low=1)
    tokenizer.padding_side = "right"
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
