"""connlap_lite: attention as a connection walk, in small modules grouped by wing.

The theory the book teaches sits at the top and imports no wing; each wing is a folder; only the pages (and the
command line) import ``pages``, and ``measure`` never imports ``known`` (``tests/contracts/test_layout.py`` holds the order).

=================  ==================================================
module             idea
=================  ==================================================
``walks``          connection walks, gauges, holonomy (chapter *Connection walks*)
``chains``         the walk as a Markov chain: stochasticity, stationary distribution, reversibility
``transports``     edge transports: constant, a multi-head mixture kept factored, explicit, in new frames
``attention``      reference attention and its walks (the single-head and multi-head theorems)
``laplacian``      connection Laplacian, transports' defects, energy, spectra (chapters *Connection Laplacian*,
                   *Reversibility*)
``testing``        what checks share: relative error, random orthogonal matrices
``models``         reading real models: ``load`` (offline short names, hub ids, folders), ``offline`` (the packaged
                   files), ``adapters`` (one small module per weight layout), ``extraction`` (layers streamed as
                   walks, hooks in a context manager), ``rebuild`` (attention from the model's own queries, keys and
                   mask), ``verify`` (the walk against each module's output), ``text`` (passages from three
                   corpora), ``footprint`` and ``memory`` (what a measurement holds, refused before it is spent),
                   ``twins`` (random-init twins: a model's architecture with fresh weights)
``measure``        measuring: ``metrics`` (each by its formula, E1-E3), ``edges`` (edge transports from their
                   factors), ``nulls`` (rotated and Gaussian heads, shuffled passages, 4-bit),
                   ``stats`` (bootstrap, Spearman, Holm), ``analysis`` (``analyze``: every metric against its nulls),
                   ``cache``, ``rivals`` (the rival readings' forwards), ``ladder`` (E3 on one family's sizes)
``verdicts``       judging: ``record`` (the measurement record's shape and the read-only ``Report``), ``words``
                   (the verdict vocabulary, Holm families, minimum passages and seeds), ``rules`` (E1-E3's rules in
                   force, frozen), ``history`` (the replaced rules, still runnable, and ``RULE_CHANGES``),
                   ``readings`` (the rival readings' rules), ``scorecard`` (the verdict table), ``synthetic``
                   (records whose answer is known: the rules' size and power)
``known``          five published results about attention, reproduced (the chapter of that name):
                   ``sinks``, ``stream``, ``distances``, ``report``, ``statements``, ``history``, ``synthetic``
``pages``          the book's pages: ``findings`` (each empirical chapter's computed paragraphs), ``boxes`` (the
                   verdicts in words), ``prose`` (numbers into words), ``plots``, ``edition`` (glued figures and
                   paragraphs, the Colab edition's set-up), ``settings`` (the book's models and samples),
                   ``exercises`` (graded ``check_*`` functions), ``toys`` and ``widgets`` (the explorers;
                   ``from connlap_lite.pages import widgets``)
=================  ==================================================

Numpy in gives numpy out; torch in gives torch out.
"""
from .attention import AttentionWeights, attention_patterns, mha_walk, multi_head_attention, sha_walk, walk_from_heads
from .chains import reversibility_defect, stationary_distribution, stochasticity_defect
from .laplacian import (connection_laplacian, dirichlet_energy, generator_spectrum, isometry_defect,
                        random_walk_connection, symmetry_defect)
from .models.extraction import LayerWalks, attention_walks, head_transports
from .models.load import load_model
from .models.text import default_texts, encode, passages
from .transports import ConstantTransport, EdgeTransport, HeadTransports, MixtureTransport
from .walks import ConnectionWalk

__version__ = "0.3.0"   # the one source: pyproject, the book, CITATION.cff (tests/book/test_release.py)

__all__ = [
    "ConnectionWalk", "ConstantTransport", "MixtureTransport", "EdgeTransport", "HeadTransports",
    "AttentionWeights", "attention_patterns", "multi_head_attention", "sha_walk", "mha_walk",
    "walk_from_heads",
    "connection_laplacian", "random_walk_connection", "stationary_distribution",
    "stochasticity_defect", "reversibility_defect", "isometry_defect", "symmetry_defect",
    "dirichlet_energy", "generator_spectrum",
    "load_model", "head_transports", "attention_walks", "LayerWalks", "passages", "encode", "default_texts",
]
