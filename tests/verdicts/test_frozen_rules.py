"""The rules are frozen: a digest of each rule function's code and of the rules' constants, per claim and rule.

Rule 4 (E1, E3) and rule 5 (E2) were registered on 2026-12-04 (``connlap_lite.verdicts.history.RULE_CHANGES``) and
frozen here, with the confirmation split's seed (``rules.CONFIRMATION_SEED``).  Changing the code of a rule in force
(or a constant it reads) fails ``test_the_rules_in_force_are_the_frozen_ones`` until a new dated rule is registered
in ``RULE_CHANGES``, the old one kept runnable in ``connlap_lite.verdicts.history`` (and its digest kept here, under its
number), and the new one's digest added here.  A digest covers a function's code, not its docstring or comments
(``digest``), so words can be corrected without registering a rule; ``test_a_changed_rule_fails_the_digest`` shows
that a changed line of code is caught.

To freeze a new rule: ``python -c "from tests.verdicts.test_frozen_rules import print_digests; print_digests()"``.
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import re
import textwrap

import pytest

from connlap_lite.verdicts import rules as R
from connlap_lite.verdicts import history as H

# The shared machinery every rule of 2026-12-04 reads (a change here changes them all).
SHARED = ("connlap_lite.measure.stats.p_win", "connlap_lite.measure.stats.expansion", "connlap_lite.measure.stats.seed_p",
          "connlap_lite.measure.stats.holm", "connlap_lite.measure.stats.draws_for", "connlap_lite.measure.stats.percentile_interval",
          "connlap_lite.measure.stats.unit_draws", "connlap_lite.verdicts.words.flag", "connlap_lite.verdicts.words.data_status",
          "connlap_lite.verdicts.words.combine", "connlap_lite.verdicts.words.decide", "connlap_lite.verdicts.record.third",
          "connlap_lite.verdicts.record.late", "connlap_lite.verdicts.record.late_value", "connlap_lite.verdicts.record.registered_nulls",
          "connlap_lite.verdicts.record.random_nulls", "connlap_lite.verdicts.record.shuffled_nulls", "connlap_lite.verdicts.record.matrix",
          "connlap_lite.verdicts.rules.p_max", "connlap_lite.verdicts.rules.nonfinite_cells", "connlap_lite.verdicts.rules.null_sources",
          "connlap_lite.verdicts.rules.counts", "connlap_lite.verdicts.rules.boot_p", "connlap_lite.verdicts.rules.units_p",
          "connlap_lite.verdicts.rules.holm_rows", "connlap_lite.verdicts.rules._stable_word", "connlap_lite.verdicts.rules._holm_words")
RULES = {
    ("E1", 4): SHARED + ("connlap_lite.verdicts.rules.e1_nulls", "connlap_lite.verdicts.rules.e1_word", "connlap_lite.verdicts.rules._profile",
                         "connlap_lite.verdicts.rules.e1_evidence", "connlap_lite.verdicts.rules._t_above",
                         "connlap_lite.verdicts.rules.e1_table", "connlap_lite.verdicts.rules.e1"),
    ("E2", 5): SHARED + ("connlap_lite.verdicts.rules.value_groups", "connlap_lite.verdicts.rules.hierarchical_draws",
                         "connlap_lite.verdicts.rules.hierarchical_weights", "connlap_lite.verdicts.rules.hierarchical_means",
                         "connlap_lite.verdicts.rules.e2_word", "connlap_lite.verdicts.rules.e2_evidence",
                         "connlap_lite.verdicts.rules.e2_table", "connlap_lite.verdicts.rules.e2"),
    ("E3", 4): SHARED + ("connlap_lite.verdicts.rules.gap_null", "connlap_lite.verdicts.rules.gap", "connlap_lite.verdicts.rules.row_slopes",
                         "connlap_lite.verdicts.rules.leave_one_out", "connlap_lite.verdicts.rules.slope_test",
                         "connlap_lite.verdicts.rules.e3"),
    # the rules they replaced, kept runnable (their code frozen from the day they moved to rules_history)
    ("E1", 3): ("connlap_lite.verdicts.history.e1_evidence_rule3", "connlap_lite.verdicts.history.e1_table_rule3",
                "connlap_lite.verdicts.history.e1_rule3"),
    ("E2", 4): ("connlap_lite.verdicts.history.e2_evidence_rule4", "connlap_lite.verdicts.history.e2_table_rule4"),
    ("E3", 3): ("connlap_lite.verdicts.history.gap_null_rule3", "connlap_lite.verdicts.history.gap_rule3",
                "connlap_lite.verdicts.history.e3_rule3", "connlap_lite.verdicts.history._sign"),
}
# The constants the rules of 2026-12-04 read, and the measurement they need (the shuffled null's permutations).
CONSTANTS = ("connlap_lite.verdicts.rules.E1_METRIC", "connlap_lite.verdicts.rules.RULE", "connlap_lite.verdicts.rules.E2_RULE",
             "connlap_lite.verdicts.rules.RULE_DATE", "connlap_lite.verdicts.rules.CONFIRMATION_SEED", "connlap_lite.verdicts.rules.STABILITY",
             "connlap_lite.verdicts.rules.RESAMPLES", "connlap_lite.verdicts.rules.PROFILE_TOL", "connlap_lite.verdicts.rules.MIN_SPAN",
             "connlap_lite.verdicts.rules.SEED_MEAN", "connlap_lite.verdicts.rules.DECIDED", "connlap_lite.verdicts.rules.PROFILES",
             "connlap_lite.verdicts.rules._UNIT_SALT", "connlap_lite.verdicts.rules.E1_CONDITIONS", "connlap_lite.verdicts.rules.E2_CONDITIONS",
             "connlap_lite.verdicts.words.ALPHA", "connlap_lite.verdicts.words.MIN_PASSAGES", "connlap_lite.verdicts.words.MIN_SEEDS",
             "connlap_lite.measure.stats.RESOLUTION", "connlap_lite.verdicts.record.NULLS", "connlap_lite.verdicts.record.SEED_NULL",
             "connlap_lite.verdicts.record.DATA_SEED_KEYS", "connlap_lite.verdicts.record.SEPARATIONS", "connlap_lite.measure.analysis.SHUFFLES")

FROZEN = {   # digests of each frozen rule's functions (print_digests), frozen on 2026-12-04
    ('E1', 4): {
        "connlap_lite.measure.stats.p_win":
            "2884983f2d3ed99a5603d07d8f88c7b3bda27692c2dfde463209f50a808d6269",
        "connlap_lite.measure.stats.expansion":
            "799806c71f0085d33a5dc0d974d30051b8cd891d3418719f5a2208187a74e47f",
        "connlap_lite.measure.stats.seed_p":
            "b1c6ce2bbe68b1bb91dd8e040855da69c44b7eded115aeabfa3ae3660d1e056f",
        "connlap_lite.measure.stats.holm":
            "ca70bd4c731ca582ae7e0b08df80de1501197a9b0e25bc24633612783deaf546",
        "connlap_lite.measure.stats.draws_for":
            "19457a0b3f4320658c58d6832e2da9afa41920c6d98fb97fa353bdac94bafc3e",
        "connlap_lite.measure.stats.percentile_interval":
            "b9e7249f74c88af4bbd6fd23a73fb83d10771c6048705826ec31c2229370eeb1",
        "connlap_lite.measure.stats.unit_draws":
            "8aabc62587af893aa115826021800a3dee0e4281fea5759cadbb1f5cf8a29454",
        "connlap_lite.verdicts.words.flag":
            "47cdf59dfd8722f3f40fdf332d535ba34c5f43902b3bfa775013df8cd2425570",
        "connlap_lite.verdicts.words.data_status":
            "f8364d9625a470909c59e71262d5d6f45baf421ac1f0c92a4aadd73766e23055",
        "connlap_lite.verdicts.words.combine":
            "360d27814b868fee90f89d1e7ce9a9ddffa54784100051d7de14c0f7d482ffd8",
        "connlap_lite.verdicts.words.decide":
            "bf1a55d377024c1f8d34769dd04404e8513de8950ac9a30e519780e437f16068",
        "connlap_lite.verdicts.record.third":
            "a7d4f386325e9d592cc998b61a1b15e3e97d42b2f63b4d526f62ac4ef24bac25",
        "connlap_lite.verdicts.record.late":
            "7d2f9ea2a93b90a21ee5d8498754b07e5ce6366ae7f8e90b3c8fe771735cb500",
        "connlap_lite.verdicts.record.late_value":
            "fb465a6b620b119ecfdc03ec4335df2df5263f8efe9f076452c4d03bc835f569",
        "connlap_lite.verdicts.record.registered_nulls":
            "d8f7997f75d8ba887a17678a99b06d77b3b3d961b9fc2af393b02d889cb770e0",
        "connlap_lite.verdicts.record.random_nulls":
            "ac66da2a1c9d36f3fc8e5e418cac66dd9dd12ed43eec7c27f90675f485a03aa0",
        "connlap_lite.verdicts.record.shuffled_nulls":
            "19603ce9f532348def3c17a44f16f4433af3e7442c0a3bed1a4fa2806fe68748",
        "connlap_lite.verdicts.record.matrix":
            "5ef6f30231dcd1b01334622c4cbc2fbcd71ca6c724799a9733d046fba48f3eef",
        "connlap_lite.verdicts.rules.p_max":
            "5893dbcb33c12e1562c5b4c8176e9027bc4337e390867ed67e2d6ac73c710f41",
        "connlap_lite.verdicts.rules.nonfinite_cells":
            "73e09db33d804694c4416bf4cd08ec8b22bd549450d457b9ee24f0d79c7fd572",
        "connlap_lite.verdicts.rules.null_sources":
            "2abdc9ba0ff2bf4e1aec1081c29699ac694c14930a940d4ced90ec8a2fe5e425",
        "connlap_lite.verdicts.rules.counts":
            "173d68ac4c7ba77ba4c97076b5fc2f9d451a6cb2d6b54f263e852b1edc3a3e15",
        "connlap_lite.verdicts.rules.boot_p":
            "f390b73acb6503f84304c8a1efd0af524a1d153107010264d684aee9153ef641",
        "connlap_lite.verdicts.rules.units_p":
            "7c3e26af9ff404bca2d935cded9b4ca17bd5b389162c0ca8eaf6497a00fc755c",
        "connlap_lite.verdicts.rules.holm_rows":
            "beb4c0f6f595b1ec81b64ce4aa1be91d24b12859b351a710b28d878d2fb58b01",
        "connlap_lite.verdicts.rules._stable_word":
            "a15189789afe16de2a0e9eb05ed3d73090aaadfd841763e3549553baa86b35ae",
        "connlap_lite.verdicts.rules._holm_words":
            "de2a93a296674ce5024dde3d40b7606976ee4b7bb3ac9999ad624f0119b750e3",
        "connlap_lite.verdicts.rules.e1_nulls":
            "c860bdfa6827736d82270d2804cd079645150158581bfd4bf06144412696c885",
        "connlap_lite.verdicts.rules.e1_word":
            "ee1284942d3f21d0df79076ec667bbb38c310a784b883daefbbad497ebf8b26e",
        "connlap_lite.verdicts.rules._profile":
            "a00173a17c2c38f32f2d8ec1e622c8bb93df132e165a879af12227c039368c59",
        "connlap_lite.verdicts.rules.e1_evidence":
            "4c68fabb83393917a32977be41c8d3b9660d66e0d0b7462b3ab56dd60417285a",
        "connlap_lite.verdicts.rules._t_above":
            "13f8467d4aa4661ae78d1645306e55faf20fa8fcabeb22765e78c1489366ef55",
        "connlap_lite.verdicts.rules.e1_table":
            "3d821f9f1959369d3da8d565ecbc5a91c6c2cc02f04dfeddf29a9db1d1c0c11d",
        "connlap_lite.verdicts.rules.e1":
            "b7b422390edb93f0a275ea47cddbb46e4e6e39f50cdcba4125c068002775e666",
    },
    ('E2', 5): {
        "connlap_lite.measure.stats.p_win":
            "2884983f2d3ed99a5603d07d8f88c7b3bda27692c2dfde463209f50a808d6269",
        "connlap_lite.measure.stats.expansion":
            "799806c71f0085d33a5dc0d974d30051b8cd891d3418719f5a2208187a74e47f",
        "connlap_lite.measure.stats.seed_p":
            "b1c6ce2bbe68b1bb91dd8e040855da69c44b7eded115aeabfa3ae3660d1e056f",
        "connlap_lite.measure.stats.holm":
            "ca70bd4c731ca582ae7e0b08df80de1501197a9b0e25bc24633612783deaf546",
        "connlap_lite.measure.stats.draws_for":
            "19457a0b3f4320658c58d6832e2da9afa41920c6d98fb97fa353bdac94bafc3e",
        "connlap_lite.measure.stats.percentile_interval":
            "b9e7249f74c88af4bbd6fd23a73fb83d10771c6048705826ec31c2229370eeb1",
        "connlap_lite.measure.stats.unit_draws":
            "8aabc62587af893aa115826021800a3dee0e4281fea5759cadbb1f5cf8a29454",
        "connlap_lite.verdicts.words.flag":
            "47cdf59dfd8722f3f40fdf332d535ba34c5f43902b3bfa775013df8cd2425570",
        "connlap_lite.verdicts.words.data_status":
            "f8364d9625a470909c59e71262d5d6f45baf421ac1f0c92a4aadd73766e23055",
        "connlap_lite.verdicts.words.combine":
            "360d27814b868fee90f89d1e7ce9a9ddffa54784100051d7de14c0f7d482ffd8",
        "connlap_lite.verdicts.words.decide":
            "bf1a55d377024c1f8d34769dd04404e8513de8950ac9a30e519780e437f16068",
        "connlap_lite.verdicts.record.third":
            "a7d4f386325e9d592cc998b61a1b15e3e97d42b2f63b4d526f62ac4ef24bac25",
        "connlap_lite.verdicts.record.late":
            "7d2f9ea2a93b90a21ee5d8498754b07e5ce6366ae7f8e90b3c8fe771735cb500",
        "connlap_lite.verdicts.record.late_value":
            "fb465a6b620b119ecfdc03ec4335df2df5263f8efe9f076452c4d03bc835f569",
        "connlap_lite.verdicts.record.registered_nulls":
            "d8f7997f75d8ba887a17678a99b06d77b3b3d961b9fc2af393b02d889cb770e0",
        "connlap_lite.verdicts.record.random_nulls":
            "ac66da2a1c9d36f3fc8e5e418cac66dd9dd12ed43eec7c27f90675f485a03aa0",
        "connlap_lite.verdicts.record.shuffled_nulls":
            "19603ce9f532348def3c17a44f16f4433af3e7442c0a3bed1a4fa2806fe68748",
        "connlap_lite.verdicts.record.matrix":
            "5ef6f30231dcd1b01334622c4cbc2fbcd71ca6c724799a9733d046fba48f3eef",
        "connlap_lite.verdicts.rules.p_max":
            "5893dbcb33c12e1562c5b4c8176e9027bc4337e390867ed67e2d6ac73c710f41",
        "connlap_lite.verdicts.rules.nonfinite_cells":
            "73e09db33d804694c4416bf4cd08ec8b22bd549450d457b9ee24f0d79c7fd572",
        "connlap_lite.verdicts.rules.null_sources":
            "2abdc9ba0ff2bf4e1aec1081c29699ac694c14930a940d4ced90ec8a2fe5e425",
        "connlap_lite.verdicts.rules.counts":
            "173d68ac4c7ba77ba4c97076b5fc2f9d451a6cb2d6b54f263e852b1edc3a3e15",
        "connlap_lite.verdicts.rules.boot_p":
            "f390b73acb6503f84304c8a1efd0af524a1d153107010264d684aee9153ef641",
        "connlap_lite.verdicts.rules.units_p":
            "7c3e26af9ff404bca2d935cded9b4ca17bd5b389162c0ca8eaf6497a00fc755c",
        "connlap_lite.verdicts.rules.holm_rows":
            "beb4c0f6f595b1ec81b64ce4aa1be91d24b12859b351a710b28d878d2fb58b01",
        "connlap_lite.verdicts.rules._stable_word":
            "a15189789afe16de2a0e9eb05ed3d73090aaadfd841763e3549553baa86b35ae",
        "connlap_lite.verdicts.rules._holm_words":
            "de2a93a296674ce5024dde3d40b7606976ee4b7bb3ac9999ad624f0119b750e3",
        "connlap_lite.verdicts.rules.value_groups":
            "03dc9c177dc4bd298fb67a395c97e2395dc2fec2998fef4f75d8beba37620d3a",
        "connlap_lite.verdicts.rules.hierarchical_draws":
            "48dab96920d8c9e903f4f45ef2c4e55782667933e6a9509b68685f8e94bfba11",
        "connlap_lite.verdicts.rules.hierarchical_weights":
            "b5861588d4fa42416929b1ebfe9fd4bb192605823795420e006dbe2fda92e999",
        "connlap_lite.verdicts.rules.hierarchical_means":
            "e6e23eb9c665e4cc75354ea3a107dab6b76a84d045e91dc62ee12e3eb4c5160c",
        "connlap_lite.verdicts.rules.e2_word":
            "b865838f7d01cf5f1e9cd4f3299d4c980a7cfc1daa3e508e25f2d44f848acd35",
        "connlap_lite.verdicts.rules.e2_evidence":
            "6999cc2601af57cc94ca0c3fb0b1d83078d2ee9e537d359a9263b95e96f0f3e7",
        "connlap_lite.verdicts.rules.e2_table":
            "31423ea358b9509a28eb193b7b94f3ec4c0d79f43bab673dd3b9a1d860192a58",
        "connlap_lite.verdicts.rules.e2":
            "99d3f6d684ed4c06e274900e844548b9f51492e03fc65b21f872e3c1b97d749a",
    },
    ('E3', 4): {
        "connlap_lite.measure.stats.p_win":
            "2884983f2d3ed99a5603d07d8f88c7b3bda27692c2dfde463209f50a808d6269",
        "connlap_lite.measure.stats.expansion":
            "799806c71f0085d33a5dc0d974d30051b8cd891d3418719f5a2208187a74e47f",
        "connlap_lite.measure.stats.seed_p":
            "b1c6ce2bbe68b1bb91dd8e040855da69c44b7eded115aeabfa3ae3660d1e056f",
        "connlap_lite.measure.stats.holm":
            "ca70bd4c731ca582ae7e0b08df80de1501197a9b0e25bc24633612783deaf546",
        "connlap_lite.measure.stats.draws_for":
            "19457a0b3f4320658c58d6832e2da9afa41920c6d98fb97fa353bdac94bafc3e",
        "connlap_lite.measure.stats.percentile_interval":
            "b9e7249f74c88af4bbd6fd23a73fb83d10771c6048705826ec31c2229370eeb1",
        "connlap_lite.measure.stats.unit_draws":
            "8aabc62587af893aa115826021800a3dee0e4281fea5759cadbb1f5cf8a29454",
        "connlap_lite.verdicts.words.flag":
            "47cdf59dfd8722f3f40fdf332d535ba34c5f43902b3bfa775013df8cd2425570",
        "connlap_lite.verdicts.words.data_status":
            "f8364d9625a470909c59e71262d5d6f45baf421ac1f0c92a4aadd73766e23055",
        "connlap_lite.verdicts.words.combine":
            "360d27814b868fee90f89d1e7ce9a9ddffa54784100051d7de14c0f7d482ffd8",
        "connlap_lite.verdicts.words.decide":
            "bf1a55d377024c1f8d34769dd04404e8513de8950ac9a30e519780e437f16068",
        "connlap_lite.verdicts.record.third":
            "a7d4f386325e9d592cc998b61a1b15e3e97d42b2f63b4d526f62ac4ef24bac25",
        "connlap_lite.verdicts.record.late":
            "7d2f9ea2a93b90a21ee5d8498754b07e5ce6366ae7f8e90b3c8fe771735cb500",
        "connlap_lite.verdicts.record.late_value":
            "fb465a6b620b119ecfdc03ec4335df2df5263f8efe9f076452c4d03bc835f569",
        "connlap_lite.verdicts.record.registered_nulls":
            "d8f7997f75d8ba887a17678a99b06d77b3b3d961b9fc2af393b02d889cb770e0",
        "connlap_lite.verdicts.record.random_nulls":
            "ac66da2a1c9d36f3fc8e5e418cac66dd9dd12ed43eec7c27f90675f485a03aa0",
        "connlap_lite.verdicts.record.shuffled_nulls":
            "19603ce9f532348def3c17a44f16f4433af3e7442c0a3bed1a4fa2806fe68748",
        "connlap_lite.verdicts.record.matrix":
            "5ef6f30231dcd1b01334622c4cbc2fbcd71ca6c724799a9733d046fba48f3eef",
        "connlap_lite.verdicts.rules.p_max":
            "5893dbcb33c12e1562c5b4c8176e9027bc4337e390867ed67e2d6ac73c710f41",
        "connlap_lite.verdicts.rules.nonfinite_cells":
            "73e09db33d804694c4416bf4cd08ec8b22bd549450d457b9ee24f0d79c7fd572",
        "connlap_lite.verdicts.rules.null_sources":
            "2abdc9ba0ff2bf4e1aec1081c29699ac694c14930a940d4ced90ec8a2fe5e425",
        "connlap_lite.verdicts.rules.counts":
            "173d68ac4c7ba77ba4c97076b5fc2f9d451a6cb2d6b54f263e852b1edc3a3e15",
        "connlap_lite.verdicts.rules.boot_p":
            "f390b73acb6503f84304c8a1efd0af524a1d153107010264d684aee9153ef641",
        "connlap_lite.verdicts.rules.units_p":
            "7c3e26af9ff404bca2d935cded9b4ca17bd5b389162c0ca8eaf6497a00fc755c",
        "connlap_lite.verdicts.rules.holm_rows":
            "beb4c0f6f595b1ec81b64ce4aa1be91d24b12859b351a710b28d878d2fb58b01",
        "connlap_lite.verdicts.rules._stable_word":
            "a15189789afe16de2a0e9eb05ed3d73090aaadfd841763e3549553baa86b35ae",
        "connlap_lite.verdicts.rules._holm_words":
            "de2a93a296674ce5024dde3d40b7606976ee4b7bb3ac9999ad624f0119b750e3",
        "connlap_lite.verdicts.rules.gap_null":
            "a9a5e7ec8087b240363edf6bf44bb6b5fb418798034bd7c6817cc34cc26b252f",
        "connlap_lite.verdicts.rules.gap":
            "cd215d030eb2580f9c47ecd1435d6c342ccee1f3fb36afb5173585886ed2cdab",
        "connlap_lite.verdicts.rules.row_slopes":
            "5a8128aedf69daf004f807ef15f6ea95d35a6d8e06e50c40adff6f107cf4f96d",
        "connlap_lite.verdicts.rules.leave_one_out":
            "5a2bfcc59353ca9a0ff3663db43e74cc34c342af80cc0f09504588c9db5783c0",
        "connlap_lite.verdicts.rules.slope_test":
            "097536ac3c4a1637783d7eadbe32848a685f8217936102aa2360c3aea10add64",
        "connlap_lite.verdicts.rules.e3":
            "5a05d6dc20f367272edc76e5bd974e556a41fd47c5dab22e3fb822747625eaa7",
    },
    ('E1', 3): {
        "connlap_lite.verdicts.history.e1_evidence_rule3":
            "27cf9015b157ae6bdf6cf334e645eeecd0e38a7ae5a09536e73994c4c15248a2",
        "connlap_lite.verdicts.history.e1_table_rule3":
            "283a06efa24cd76902af45349bb0568f6c218097575f4e4c95e0b0a9e76dc709",
        "connlap_lite.verdicts.history.e1_rule3":
            "27320e8d8d97e6c75c48cd70f3639a7561b5465b032c37400ed1f90b507d2750",
    },
    ('E2', 4): {
        "connlap_lite.verdicts.history.e2_evidence_rule4":
            "54fea064ef98b4214b5e6405c2fe9669ebae3dc99d6c6b5131989f281411cb0a",
        "connlap_lite.verdicts.history.e2_table_rule4":
            "0c981e51808d0ed32636aa58f28c49a120002d15f8bf21b94b9135691993472f",
    },
    ('E3', 3): {
        "connlap_lite.verdicts.history.gap_null_rule3":
            "77c2e8cbc8b9dca4145bb060c56aa1473e4e348c1aaf6cfe13a8e28e595f646d",
        "connlap_lite.verdicts.history.gap_rule3":
            "d200d889f96686ac902d315787185f5abf5c7587818b15807e7a623a557a9081",
        "connlap_lite.verdicts.history.e3_rule3":
            "0e138822675b601711df05e5fb3c2a99267b614a1bd982a0d4bd883392744462",
        "connlap_lite.verdicts.history._sign":
            "757de5169e81a4cc12f967c3f9a88c287873d9c5224f16369382ce530e8fed72",
    },
}
# (c00f59ef... as frozen on 2026-12-04, keyed by module address; keyed by name since 2026-12-05, when the modules
# moved into the package's wings: the values under the old addresses still give c00f59ef..., checked that day)
FROZEN_CONSTANTS = "b5e6c5cf4c00a5e92b2bf8853571dbb02ac157841fff0a33fcb192931c768018"


def _object(path: str):
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def digest(source: str) -> str:
    """sha256 of a function's code under the names it was frozen with (``history.RENAMED``): its syntax tree without
    its docstring (comments and layout never reach the tree), so that only a change of what it computes changes the
    digest."""
    node = ast.parse(textwrap.dedent(H.under_frozen_names(source))).body[0]
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(node, include_attributes=False).encode()).hexdigest()


def digests(paths) -> dict[str, str]:
    return {p: digest(inspect.getsource(_object(p))) for p in paths}


# The metrics whose registered nulls (record.NULLS, record.SEED_NULL) the rules of 2026-12-04 read: nulls registered
# later for other metrics (the rival readings') leave these rules as they are, so the digest reads these entries only.
NULL_METRICS = ("tv_norm_nosink", "tv_norm", "input_dependence_nosink", "head_defect", "head_defect_gain",
                "data_defect_nosink")


def constants_digest() -> str:
    """sha256 of the constants' values, each under its own name (not its module's: a module moved into another
    folder keeps its rules)."""
    values = {p: _object(p) for p in CONSTANTS}
    for p in ("connlap_lite.verdicts.record.NULLS", "connlap_lite.verdicts.record.SEED_NULL"):
        values[p] = {m: v for m, v in values[p].items() if m in NULL_METRICS}
    named = {p.rsplit(".", 1)[1]: v for p, v in values.items()}
    assert len(named) == len(values), "two constants of one name: name them by module again"
    return hashlib.sha256(json.dumps(named, sort_keys=True, default=repr).encode()).hexdigest()


def print_digests() -> None:                         # (to freeze a new rule: paste its lines into FROZEN)
    for key, paths in RULES.items():
        print(f"    {key!r}: {digests(paths)!r},")
    print(f"FROZEN_CONSTANTS = {constants_digest()!r}")


def in_force() -> dict[str, int]:
    """Each claim's rule in force, from the rule-change record: the last rule it changed to."""
    out: dict[str, int] = {}
    for c in H.RULE_CHANGES:
        if c["claim"] != "known":                    # (the known results' rules: their chapter's, not frozen here)
            out[c["claim"]] = max(out.get(c["claim"], 0), c["to"])
    return out


def test_the_record_names_the_rules_frozen_here():
    assert in_force() == {"E1": R.RULE, "E2": R.E2_RULE, "E3": R.RULE} == {"E1": 4, "E2": 5, "E3": 4}
    for claim, rule in in_force().items():
        assert (claim, rule) in FROZEN, f"{claim}'s rule {rule} is in force but not frozen: add its digests"
        change = [c for c in H.RULE_CHANGES if c["claim"] == claim and c["to"] == rule]
        assert [c["date"] for c in change] == [R.RULE_DATE]
    assert isinstance(R.CONFIRMATION_SEED, int) and "connlap_lite.verdicts.rules.CONFIRMATION_SEED" in CONSTANTS


@pytest.mark.parametrize("key", sorted(RULES))
def test_the_rules_in_force_are_the_frozen_ones(key):
    """Every frozen rule's functions, in force or replaced, are what they were when frozen: a rule that changes is a
    new dated rule (RULE_CHANGES), the old one kept runnable in rules_history under its number."""
    now = digests(RULES[key])
    changed = sorted(p for p in FROZEN[key] if now.get(p) != FROZEN[key][p])
    assert set(now) == set(FROZEN[key]), f"rule {key} lists other functions than were frozen"
    assert not changed, (f"{', '.join(changed)} changed since rule {key[1]} of {key[0]} was frozen: register a new "
                         "dated rule in verdicts.history.RULE_CHANGES, keep this one runnable there, and freeze the new "
                         "one here (print_digests)")


def test_the_rules_constants_are_the_frozen_ones():
    assert constants_digest() == FROZEN_CONSTANTS, ("a constant the rules of 2026-12-04 read changed (" +
                                                    ", ".join(CONSTANTS) + "): register a new dated rule")


def test_a_changed_rule_fails_the_digest():
    """The digest can fail: a changed line of code changes it; a changed docstring or comment does not."""
    source = inspect.getsource(R.e1_word)
    assert digest(source) == FROZEN[("E1", 4)]["connlap_lite.verdicts.rules.e1_word"]
    assert digest(source.replace('"partly" if falls or stable', '"partly" if falls or stable or below')) != \
        digest(source)
    worded = source.replace("E1's word from its three conditions' flags", "E1's verdict word, from its flags")
    assert worded != source and digest(worded + "    # a comment\n") == digest(source)
    assert digest(inspect.getsource(H.e1_evidence_rule3)) != digest(inspect.getsource(R.e1_evidence))


def test_a_rename_keeps_the_digest_and_nothing_else_does():
    """The helpers renamed after the freeze (``history.RENAMED``) keep their digests under the new names; a name
    outside the table, or a table entry that maps a name wrongly, changes them."""
    source = inspect.getsource(R.e1_evidence)
    assert "percentile_interval(" in source and not re.search(r"(?<!\w)_interval\(", source)  # read by its new name
    assert digest(source) == FROZEN[("E1", 4)]["connlap_lite.verdicts.rules.e1_evidence"]
    assert digest(source.replace("percentile_interval(", "other_interval(")) != digest(source)
    frozen = {p: v for key in FROZEN for p, v in FROZEN[key].items()}
    for new in H.RENAMED:                           # each renamed helper that a rule's digest covers
        for path in [p for p in frozen if p.endswith("." + new)]:
            helper = inspect.getsource(_object(path))
            assert digest(helper) == frozen[path]
            assert digest(helper.replace(f"def {new}(", f"def {new}_x(")) != frozen[path]


def test_a_renamed_helper_is_the_one_digested():
    """Every renamed helper a frozen function reads (its globals) is the object whose digest is frozen under that
    name: a local definition or an import of something else under the helper's name would pass the digests."""
    digested = {p.rsplit(".", 1)[1]: _object(p) for paths in RULES.values() for p in paths}
    for paths in RULES.values():
        for path in paths:
            fn = inspect.unwrap(_object(path))                     # (a cached function: the one it wraps)
            if not inspect.isfunction(fn):
                continue
            codes = [fn.__code__] + [c for c in fn.__code__.co_consts if inspect.iscode(c)]
            for name in {n for c in codes for n in c.co_names} & set(H.RENAMED):
                if name in digested:
                    assert fn.__globals__[name] is digested[name], f"{path} reads another {name} than the frozen one"
    with pytest.raises(ValueError, match="a name frozen before its rename"):
        digest(inspect.getsource(R.e1_evidence).replace("percentile_interval(", "_interval("))


def test_replaced_rules_still_run():
    from connlap_lite.verdicts import synthetic as Y

    r = Y.record(seed=0, e1_early=0.0, e1_late=0.1, heads_effect=0.02, data_effect=0.02)
    assert H.e1_rule3(r)["rule"] == 3 and H.e2_table_rule4([r])[0]["rule"] == 4
    assert H.e3_rule3(Y.ladder(seed=0), "tv_norm_nosink")["rule"] == 3
