import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from toc import toc_files  # noqa: F401  (one reader of _toc.yml: tools/toc.py)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium through its own chromedriver (tools/chromium.py), one for the browser tests."""
    import chromium

    try:
        with chromium.browser() as driver:
            yield driver
    except chromium.Missing as exc:
        pytest.fail(str(exc))


def fake_chunked(tmp_path, monkeypatch, module: str, chunk: str, data: list[bytes]):
    """Installed-looking packages ``module1``, ``module2``, ... on ``sys.path``, each holding one chunk of ``data``
    at ``chunk`` (formatted with ``k`` from 1 and ``j`` from 0, as the model zoo formats it), registered as the
    offline model ``"fake"``. Returns the ``Chunked`` spec, the whole file and the cache folder to use."""
    import hashlib

    from connlap_lite.models import offline

    for k, blob in enumerate(data, 1):
        pkg = tmp_path / "site" / f"{module}{k}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / chunk.format(k=k, j=k - 1)).write_bytes(blob)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(data)
    spec = offline.Chunked(module + "{k}", chunk, len(data), len(whole), hashlib.sha256(whole).hexdigest(), "fake.gguf")
    monkeypatch.setitem(offline.OFFLINE, "fake", f"{module}1..{len(data)}==0")
    return spec, whole, tmp_path / "cache"
