"""Reading real models: loading (offline short names, hub ids, folders), the offline files, one adapter per weight
layout, streaming layers as walks, rebuilding attention, verifying the reading, passages of text, memory footprints,
random-init twins.

Names are read from their modules (``connlap_lite.models.<module>``); the package's public face is
``connlap_lite`` itself.
"""
