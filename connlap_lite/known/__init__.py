"""Known results, reproduced: the book's instruments against five published findings about attention.

Each function below is one published measurement, written as a formula on the walks that
:func:`connlap_lite.attention_walks` streams, so that the chapter and ``python -m connlap_lite
analyze MODEL --json`` (key ``known_results``) compute the same numbers.

=============================  =====================================================================
``first_token_scores(A)``      Gu et al.'s per-head score: mean attention to the first token
``sink_rate(scores, eps)``     share of heads (over all layers) whose score exceeds ``eps``
``random_tokens``,             the two synthetic inputs of Gu et al.: uniformly random tokens, and one
``repeated_tokens``            token repeated at every position
``position_spread(X)``         largest distance of a token's state from the first token's (relative)
``transported(heads, X)``      every head's transported vector ``T_h x_j``
``norm_weighted_walk(A, Y)``   Kobayashi et al.'s reading: edge weight times the norm of what it carries
``residual_stream(model)``     the states between the blocks while a model runs (hooks)
``rank_one_residual(X)``       Dong et al.'s residual from rank one (relative, Frobenius)
``token_spread(X)``            largest range of a coordinate over the tokens
``column_sum_defect(P)``       distance of a walk from doubly stochastic (Sander et al.)
``head_matched_distance``      Bhojanapalli et al.'s comparison of heads in two layers
``known_results(name)``        everything above on one model and its random-init null (cached JSON)
``natural_record(report)``     its natural-text measurements in the shape that ``connlap_lite.verdicts.record`` reads
``verdicts(report)``           the chapter's rule, per statement: agree / disagree / inconclusive /
                               insufficient data / not comparable / undefined (``KNOWN_VERDICTS``); ``side``,
                               ``order`` and ``below_seeds`` are its three ways of reading intervals
``rule_changes(reports)``      each dated change of that rule, with the old and the new verdicts
=============================  =====================================================================

Every name is read here (``from connlap_lite import known; known.sink_rate``); each lives in the
module of its idea:

==============  ====================================================================================
``sinks``       sink scores and rates, the random and repeated inputs, Clark et al.'s middle layers
``stream``      the residual stream (hooks) and the norm-weighted walk of the transported vectors
``distances``   from rank one, from doubly stochastic, between the heads of two layers
``report``      ``measure_known`` on one model, ``known_results`` on a model and its null (cached JSON)
``statements``  the published statements, the rule's ``verdicts``, and the chapter's tables
``history``     the rule replaced on 2026-12-02, still runnable, and the dated record of the change
==============  ====================================================================================

Chapter: *Known results, reproduced*.
"""
from .distances import column_sum_defect, head_matched_distance, rank_one_residual, token_spread
from .history import rule_changes, verdicts_rule1
from ..models.twins import NULL_SEED
from .report import NULL_SEEDS, KNOWN_SCHEMA, absolute_positions, known_results, measure_known, natural_record, seed_defects
from .sinks import (EPS, INPUTS, first_token_scores, middle_layers, ordinary_ids, position_spread, random_tokens,
                    repeated_tokens, sink_rate)
from .statements import (COLLAPSE, PROPOSITION_TOL, STATEMENTS, KNOWN_VERDICTS, below_seeds, interval, order, side,
                         toy_report, verdict_counts, verdict_table, verdicts)
from .stream import norm_weighted_walk, residual_stream, transported

__all__ = [
    "EPS", "INPUTS", "first_token_scores", "sink_rate", "ordinary_ids", "random_tokens", "repeated_tokens",
    "position_spread", "middle_layers",
    "residual_stream", "transported", "norm_weighted_walk",
    "rank_one_residual", "token_spread", "column_sum_defect", "head_matched_distance",
    "KNOWN_SCHEMA", "NULL_SEED", "NULL_SEEDS", "measure_known", "seed_defects", "absolute_positions", "known_results",
    "natural_record",
    "PROPOSITION_TOL", "COLLAPSE", "KNOWN_VERDICTS", "STATEMENTS", "interval", "side", "order", "below_seeds", "verdicts",
    "toy_report",
    "verdict_table", "verdict_counts", "verdicts_rule1", "rule_changes",
]
