import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from toc import toc_files  # noqa: E402,F401  (one reader of _toc.yml: tools/toc.py)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
