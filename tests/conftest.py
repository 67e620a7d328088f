import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)



def toc_files(toc: dict, skip_parts=()) -> list[str]:
    """The pages of a Jupyter Book ``_toc.yml`` in reading order: the root, then every chapter and
    (nested) section of every part whose caption is not in ``skip_parts``."""
    files = [toc["root"]]

    def collect(entries):
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            collect(entry.get("sections", []))

    for part in toc.get("parts", []):
        if part.get("caption") not in skip_parts:
            collect(part.get("chapters", []))
    return files
