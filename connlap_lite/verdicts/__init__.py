"""Verdicts: the measurement record and its read-only Report, the verdict words, the rules in force, their history, the
scorecard's table, synthetic records whose answer is known.

Names are read from their modules (``connlap_lite.verdicts.<module>``); the package's public face is
``connlap_lite`` itself.
"""
