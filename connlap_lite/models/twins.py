"""Random-init twins: a model's architecture with fresh weights, the null that every pipeline measures beside it.

``random_like(model, seed)``   the same architecture, its weights drawn by the model's own initialisation;
                               the pipelines' null ``random<k>`` is ``random_like(model, NULL_SEED + k)``;
``fresh_model(auto, config, seed, attn_implementation)``   the same from a configuration (what
                               ``load_model(random_init=True)`` builds).

Chapters: *E1*, *E2*, *Known results, reproduced*.
"""
from __future__ import annotations

import contextlib
import threading

import torch

from .._backend import check_int


NULL_SEED = 1000   # random-init null k of every pipeline (E1-E3 and the known results): random_like(model, NULL_SEED + k)


def random_like(model, seed: int):
    """The null model: ``model``'s architecture with fresh weights drawn with ``seed`` (:func:`fresh_model`);
    the pipelines' random-init null ``random<k>`` is ``random_like(model, NULL_SEED + k)``."""
    from transformers import AutoModel, AutoModelForCausalLM

    auto = AutoModelForCausalLM if hasattr(model, "lm_head") else AutoModel
    null = fresh_model(auto, model.config, seed, model.config._attn_implementation)
    return null.to(next(model.parameters()).device).eval()


_DEFAULT_INIT = threading.Lock()      # the patch below is process-wide: one model built under it at a time


@contextlib.contextmanager
def _unset_default_init():
    """Linear and embedding layers built inside start as NaN instead of drawing torch's default weights."""
    def unset(module):
        with torch.no_grad():
            for p in module.parameters(recurse=False):
                p.fill_(float("nan"))

    with _DEFAULT_INIT:
        saved = torch.nn.Linear.reset_parameters, torch.nn.Embedding.reset_parameters
        torch.nn.Linear.reset_parameters = torch.nn.Embedding.reset_parameters = unset
        try:
            yield
        finally:
            torch.nn.Linear.reset_parameters, torch.nn.Embedding.reset_parameters = saved


def fresh_model(auto, config, seed: int, attn_implementation: str):
    """``auto.from_config(config)`` with its weights drawn by the model's own initialisation after ``seed``.

    Hugging Face models overwrite every linear and embedding weight with their own initialisation
    (``_init_weights``: normal with the config's ``initializer_range``, biases zero), so torch's default
    draws before it, more than half the time of building a model, are skipped.  A weight that the
    model's initialisation did not overwrite would still be NaN (checked at its ends): then the model is
    built again with the defaults, so no architecture gets unset weights.  Used by :func:`random_like` and
    by ``load_model(random_init=True)``.

    >>> from transformers import AutoModelForCausalLM, GPT2Config
    >>> config = GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=11, n_positions=8)
    >>> a = fresh_model(AutoModelForCausalLM, config, 3, "eager")
    >>> b = fresh_model(AutoModelForCausalLM, config, 3, "eager")
    >>> all(bool(p.isfinite().all()) for p in a.parameters()), bool((a.lm_head.weight == b.lm_head.weight).all())
    (True, True)
    """
    check_int(seed, "seed", low=0)
    torch.manual_seed(seed)
    with _unset_default_init():
        model = auto.from_config(config, attn_implementation=attn_implementation)
    # the model's initialisation writes whole tensors: its two ends tell whether a tensor was written
    if not any(bool(p.detach().reshape(-1)[[0, -1]].isnan().any()) for p in model.parameters()
               if p.numel() and not p.is_meta):
        return model
    del model                                               # a weight its own initialisation left alone
    torch.manual_seed(seed)
    return auto.from_config(config, attn_implementation=attn_implementation)
