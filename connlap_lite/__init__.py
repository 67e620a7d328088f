"""connlap_lite: attention as a connection walk, in a few small modules.

=================  ==================================================
module             idea
=================  ==================================================
``walks``          connection walks, gauges, holonomy (chapter *Connection walks*)
``transports``     edge transports: constant, a multi-head mixture kept factored, explicit, in new frames
``attention``      reference attention and its walks (the single-head and multi-head theorems)
``laplacian``      connection Laplacian, defects, energy, spectra (chapters *Connection Laplacian*, *Reversibility*)
``models``         loading a model: offline short names, hub ids, folders; random-init nulls
``offline``        the offline models' packages, pinned files and their checked assembly
``adapters``       one small module per weight layout (value and output maps)
``extraction``     streaming a real model's layers as walks (hooks in a context manager)
``rebuild``        a layer's attention from the model's own queries, keys and mask (attention interface)
``verify``         does the adapter read a model right: the walk against each module's output
``text``           token passages from three corpora: technical prose, source code, narrative
``metrics``        the empirical chapters' metrics, each by its formula (E1-E3)
``edges``          edge transports read from their factors: singular values, rank-free defects (E2)
``nulls``          nulls and ablations: rotated and Gaussian heads, random-init twins, shuffled passages, 4-bit
``stats``          bootstrap intervals, Spearman's rho, Holm's correction
``analysis``       ``analyze``: every metric of a model against its nulls, cached
``footprint``      what measuring a model holds in memory, from its configuration alone (no download)
``rivals``         the rival readings' forwards: update ratios and ablation costs, hooks in a context manager
``ladder``         E3 on one family's sizes (``connlap ladder``), one model in memory at a time; tiny offline ladders
``memory``         a measurement refused before it is spent: its estimated peak against the memory available
``record``         the measurement record's shape (metric names, units, nulls) and the read-only ``Report``
``verdicts``       the verdict vocabulary, Holm families, the minimum passages and seeds
``report``         the rules of E1-E3 in force (rules 4 and 5, frozen) and their verdicts
``rules_history``  the replaced rules of E1-E3 (rules 1 to 3, E2's rule 4), still runnable, and ``RULE_CHANGES``
``readings``       the rival readings' rules (layers that write little, a dominant direction, the self-loop)
``synthetic``      synthetic records whose answer is known: the rules' size and power are tested on them
``scorecard``      the verdict table (robustness, corpora) and the chapters' verdict boxes
``prose``          numbers into words for the computed paragraphs: ranges, lists, counts
``known``          five published results about attention, reproduced (the chapter of that name);
                   a package: ``sinks``, ``stream``, ``distances``, ``report``, ``statements``
``plots``          the chapters' figures at column width: curves against nulls, verdict grids
``settings``       the book's settings in one place: the models its chapters measure, their samples
``edition``        the Colab edition's side: its set-up, and each glued figure or paragraph shown in place
``findings``       the empirical chapters' computed paragraphs, one module per chapter
``exercises``      graded exercises: the ``check_*`` functions, one module per part of the book
``testing``        what checks share: relative error, random orthogonal matrices
``toys``           the explorers' toy connections: holonomy on a cycle, the conditions (S), (R), (M) on and off
``widgets``        interactive explorers (ipywidgets); not imported here:
                   ``from connlap_lite import widgets``
=================  ==================================================

Numpy in gives numpy out; torch in gives torch out.
"""
from .attention import (AttentionWeights, attention_patterns, mha_walk, multi_head_attention,
                        sha_walk, walk_from_heads)
from .laplacian import (connection_laplacian, dirichlet_energy, generator_spectrum, isometry_defect,
                        random_walk_connection, reversibility_defect, stationary_distribution,
                        stochasticity_defect, symmetry_defect)
from .extraction import LayerWalks, attention_walks, head_transports
from .models import load_model
from .text import default_texts, encode, passages
from .transports import ConstantTransport, EdgeTransport, HeadTransports, MixtureTransport
from .walks import ConnectionWalk

__version__ = "0.3.0"   # the one source: pyproject, the book, CITATION.cff (tests/test_release.py)

__all__ = [
    "ConnectionWalk", "ConstantTransport", "MixtureTransport", "EdgeTransport", "HeadTransports",
    "AttentionWeights", "attention_patterns", "multi_head_attention", "sha_walk", "mha_walk",
    "walk_from_heads",
    "connection_laplacian", "random_walk_connection", "stationary_distribution",
    "stochasticity_defect", "reversibility_defect", "isometry_defect", "symmetry_defect",
    "dirichlet_energy", "generator_spectrum",
    "load_model", "head_transports", "attention_walks", "LayerWalks", "passages", "encode", "default_texts",
]
