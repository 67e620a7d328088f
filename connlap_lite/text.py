"""Real English text that ships with Python, cut into token passages.

The default corpus is the standard library's ``pydoc_data.topics`` (79 documentation
texts, about 465,000 characters), present on every CPython, Colab's included.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import random

import torch


def default_texts() -> list[str]:
    """The texts of ``pydoc_data.topics``, in a fixed (sorted) order."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def _specials(tokenizer) -> tuple[list[int], list[int]]:
    """The special ids a tokenizer puts before and after a text (e.g. [CLS] ... [SEP], <bos>)."""
    body = tokenizer("walk", add_special_tokens=False)["input_ids"]
    full = tokenizer("walk", add_special_tokens=True)["input_ids"]
    for k in range(len(full) - len(body) + 1):
        if full[k:k + len(body)] == body:
            return full[:k], full[k + len(body):]
    return [], []


def passages(tokenizer, n_passages: int = 16, n_tokens: int = 128, *, seed: int = 0,
             texts: list[str] | None = None) -> dict:
    """A batch of ``n_passages`` passages of exactly ``n_tokens`` tokens each.

    The texts (default :func:`default_texts`) are tokenised, joined, and cut into
    non-overlapping windows; ``seed`` picks which windows.  The tokenizer's own
    special tokens ([CLS]/[SEP], <bos>) are kept and counted in ``n_tokens``.
    Returns ``{"input_ids": (B, n), "attention_mask": (B, n)}``.

    Chapter: *Reading a real transformer as a connection walk*.
    """
    if not isinstance(n_passages, int) or n_passages < 1:
        raise ValueError(f"n_passages must be a positive int, got {n_passages!r}")
    pre, post = _specials(tokenizer)
    body = n_tokens - len(pre) - len(post)
    if not isinstance(n_tokens, int) or body < 2:
        raise ValueError(f"n_tokens must be an int of at least {len(pre) + len(post) + 2}, got {n_tokens!r}")
    texts = default_texts() if texts is None else list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a non-empty list of strings")
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
    if isinstance(texts, str) or not texts:
        raise TypeError("texts must be a non-empty list of strings")
    tokenizer.padding_side = "right"
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
