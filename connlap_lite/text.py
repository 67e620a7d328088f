"""Real text, cut into token passages: three corpora of different kinds.

``pydoc``      technical prose: the standard library's ``pydoc_data.topics`` (79 documentation
               texts, about 465,000 characters), present on every CPython, Colab's included;
``stdlib``     source code: every third Python file (in sorted order) at the top of the running
               interpreter's standard library, so it changes a little with the Python version;
``narrative``  literary prose: the ``literature`` quotations of Debian's ``fortunes-min`` package
               (``make corpora``, or ``apt-get install fortunes-min``; Colab's Ubuntu has it too).

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import hashlib
import random
from functools import lru_cache

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
    """The texts of ``pydoc_data.topics``, in a fixed (sorted) order."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


CORPORA = ("pydoc", "stdlib", "narrative")
FORTUNES = "/usr/share/games/fortunes/literature"


def check_corpus(name) -> str:
    """``name`` if it is one of :data:`CORPORA`, else an error listing them.

    >>> check_corpus("stdlib")
    'stdlib'
    >>> check_corpus("bible")
    Traceback (most recent call last):
    ...
    ValueError: corpus must be one of ('pydoc', 'stdlib', 'narrative'), got 'bible'
    """
    if name not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {name!r}")
    return name


def corpus(name: str = "pydoc") -> list[str]:
    """The texts of corpus ``name`` (one of :data:`CORPORA`), in a fixed order.

    >>> texts = corpus("stdlib")
    >>> len(texts) > 40 and all(t.strip() for t in texts)
    True
    """
    import sysconfig
    from pathlib import Path

    if check_corpus(name) == "pydoc":
        return default_texts()
    if name == "stdlib":
        root = Path(sysconfig.get_paths()["stdlib"])
        files = sorted(f for f in root.glob("*.py") if f.is_file())[::3]     # every third file: about 1.5 MB
        texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
        return [t for t in texts if t.strip()]
    path = Path(FORTUNES)
    if not path.is_file():
        raise FileNotFoundError(f"corpus 'narrative' reads {FORTUNES} from Debian's fortunes-min package, which is "
                                "not installed: run `make corpora` (or `sudo apt-get install fortunes-min`), or "
                                "choose corpus='pydoc' or 'stdlib'")
    quotes = [q.strip() for q in path.read_text(encoding="utf-8", errors="replace").split("\n%\n")]
    return [q for q in quotes if q]


@lru_cache(maxsize=None)
def corpus_digest(name: str = "pydoc") -> str:
    """A short sha256 of corpus ``name``'s texts, for keys of cached measurements.

    ``pydoc`` and ``stdlib`` come with the running Python and differ between its releases, so a
    measurement cached under one Python must not be read back under another: the key carries the text.

    >>> d = corpus_digest("pydoc")
    >>> len(d), d == corpus_digest("pydoc") != corpus_digest("stdlib")
    (16, True)
    """
    h = hashlib.sha256()
    for t in corpus(name):
        h.update(t.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:16]


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


def passages(tokenizer, n_passages: int = 16, n_tokens: int = 128, *, seed: int = 0,
             texts: list[str] | None = None, bos: bool | None = None) -> dict:
    """A batch of ``n_passages`` passages of exactly ``n_tokens`` tokens each.

    The texts (default :func:`default_texts`) are tokenised, joined, and cut into
    non-overlapping windows; ``seed`` picks which windows.  The tokenizer's own
    special tokens ([CLS]/[SEP], <bos>) are kept and counted in ``n_tokens``.
    ``bos`` overrides the tokenizer's habit for the beginning-of-sequence token: True puts it
    first (if the tokenizer does not already), False leaves it out, None does what the tokenizer does.
    Returns ``{"input_ids": (B, n), "attention_mask": (B, n)}``.

    Chapter: *Reading a real transformer as a connection walk*.
    """
    from ._backend import check_int

    _check_tokenizer(tokenizer)
    if isinstance(n_passages, bool) or not isinstance(n_passages, int) or n_passages < 1:
        raise ValueError(f"n_passages must be a positive int, got {n_passages!r}")
    pre, post = _with_bos(tokenizer, *_specials(tokenizer), bos)
    check_int(n_tokens, "n_tokens")
    body = n_tokens - len(pre) - len(post)
    if body < 2:
        raise ValueError(f"n_tokens must be an int of at least {len(pre) + len(post) + 2}, got {n_tokens!r}")
    check_int(seed, "seed")
    texts = default_texts() if texts is None else check_texts(texts)
    ids: list[int] = []
    for t in texts:
        ids += tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"]
    windows = len(ids) // body
    if windows < n_passages:
        raise ValueError(f"the texts give only {windows} passages of {n_tokens} tokens, asked for {n_passages}; "
                         "pass more text or ask for fewer or shorter passages")
    starts = sorted(random.Random(seed).sample(range(windows), n_passages))
    rows = [pre + ids[s * body:(s + 1) * body] + post for s in starts]
    input_ids = torch.tensor(rows, dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}


def encode(tokenizer, texts: list[str], max_tokens: int = 128) -> dict:
    """Your own texts as one right-padded batch (each truncated to ``max_tokens``)."""
    from ._backend import check_int

    _check_tokenizer(tokenizer)
    texts = check_texts(texts)
    check_int(max_tokens, "max_tokens", low=1)
    tokenizer.padding_side = "right"
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
