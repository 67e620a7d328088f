"""Measuring: the empirical chapters' metrics, edge spectra, nulls, statistics, the analysis pipeline and its cache,
the rival readings' forwards, ladders of sizes.

Names are read from their modules (``connlap_lite.measure.<module>``); the package's public face is
``connlap_lite`` itself.
"""
