"""Measure some of the book's models into the measurement cache, as the chapters do, so that a second process can.

    .venv/bin/python tools/measure.py MODEL [MODEL ...]

Each model is measured exactly as the chapters call :func:`connlap_lite.measure.analysis.analyze` (the book's passages and
tokens, :data:`connlap_lite.pages.settings.BOOK`, make book's with ``CONNLAP_FULL=1``; every other argument at its
default), so a chapter that asks for it later reads the cached report instead of measuring it again. make test runs
it in the lane of the unit tests, and make book in its second lane, for one model, while the chapters' lane
measures the others: the two cores share the measurement (the cache's lock makes a chapter that asks for the same
report meanwhile wait for it, never measure it twice).
"""
import sys
import time

from connlap_lite.measure.analysis import analyze
from connlap_lite.pages.settings import BOOK


def main(models: list[str]) -> int:
    if not models:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    n_passages, n_tokens = BOOK.sample()
    for name in models:
        start = time.perf_counter()
        report = analyze(name, n_passages=n_passages, n_tokens=n_tokens)
        print(f"{name}: {report['passages']} passages x {report['tokens']} tokens, "
              f"{time.perf_counter() - start:.0f} s (measured in {report['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
