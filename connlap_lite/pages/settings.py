"""The book's settings, in one place: the models its chapters measure and how much text they read.

``make test`` (and Colab) measures the four offline models on 8 passages of 64 tokens; ``make book``
(``CONNLAP_FULL=1``) on 32 passages of 64 tokens, and adds ``full_model`` where a chapter uses it. The chapters'
parameter cells, tools/same_numbers.py and the Colab edition's set-up (which installs the models' packages)
read them here.

>>> BOOK.sample(full=False), BOOK.sample(full=True)
((8, 64), (32, 64))
>>> BOOK.models
('minilm-l6', 'smollm2-135m', 'gemma3-270m', 'qwen2.5-coder-0.5b')
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """The models a chapter measures and its passages and tokens per passage, in make test and in make book."""

    models: tuple[str, ...]
    full_model: str                   # the fifth model, in make book only
    test: tuple[int, int]             # (passages, tokens) of make test and of Colab
    full: tuple[int, int]             # (passages, tokens) of make book

    @staticmethod
    def is_full() -> bool:
        """Whether this is the full build (``make book`` sets ``CONNLAP_FULL=1``)."""
        return os.environ.get("CONNLAP_FULL") == "1"

    def sample(self, full: bool | None = None) -> tuple[int, int]:
        """``(passages, tokens)`` of the full build (``full``; default: :meth:`is_full`) or of make test."""
        return self.full if (self.is_full() if full is None else full) else self.test


# make book's passages were 32 x 128 until 2026-12-05; with the five shuffles, the five seeds, the rival readings
# and the confirmation split its four main reports alone took 1794 s of its hour: the passages (the rules' units,
# hence their power) are kept, their length is make test's (connlap_lite.models.text.EXPLORATORY keeps both draws).
BOOK = Settings(models=("minilm-l6", "smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"),
                full_model="qwen2.5-coder-1.5b", test=(8, 64), full=(32, 64))
