"""The empirical chapters' computed paragraphs: one module per chapter, each turning that chapter's reports and
verdict rows into ``{glue name: markdown}`` (its ``KEYS``), built on :mod:`connlap_lite.pages.prose`.

A chapter glues what its module returns in one cell, so no sentence that states a number or a verdict is
typed on the page, and each module is unit-tested on small synthetic reports (``tests/pages/test_findings.py``).

===============  ==================================================
module           chapter
===============  ==================================================
``e1``           *E1: stability*
``e2``           *E2: isometry*
``e3``           *E3: scale*
``scorecard``    *Replication scorecard*
``known``        *Known results, reproduced*
``beyond``       *Beyond E1-E3*
``reading``      *Reading a real transformer as a connection walk*
``performance``  *Performance* (its opening)
``ladder``       *E3 on a ladder*
===============  ==================================================
"""
