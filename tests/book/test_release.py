"""Release metadata agrees with itself: one version (connlap_lite.__version__) in the package, the book,
CITATION.cff and CHANGELOG.md, and one citation in CITATION.cff and the README."""
import re
import tomllib
from pathlib import Path

import yaml

import connlap_lite

ROOT = Path(__file__).resolve().parents[2]
CFF = yaml.safe_load((ROOT / "CITATION.cff").read_text())
README = (ROOT / "README.md").read_text()


def readme_bibtex() -> dict:
    entry = re.search(r"```bibtex\n@\w+\{[^,]+,\n(.*?)\n\}\n```", README, re.S)
    assert entry, "README.md has no ```bibtex entry"
    return {k: v.strip() for k, v in re.findall(r"^\s*(\w+)\s*=\s*\{(.*)\},?\s*$", entry.group(1), re.M)}


def test_citation_file_matches_the_readme():
    bib = readme_bibtex()
    pref = CFF["preferred-citation"]
    assert pref["title"] == CFF["title"] == bib["title"]
    assert pref["url"] == CFF["url"] == CFF["repository-code"] == bib["url"]
    assert str(pref["year"]) == bib["year"] == CFF["date-released"][:4]
    assert [a["name"] for a in pref["authors"]] == [a["name"] for a in CFF["authors"]] == [bib["author"].strip("{}")]


def test_one_version_everywhere():
    v = connlap_lite.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", v), v
    assert CFF["version"] == v, f"CITATION.cff says {CFF['version']}, the package {v}"
    latest = re.search(r"^## (\S+) \((\d{4}-\d\d-\d\d)\)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert latest and latest.group(1) == v, f"CHANGELOG.md's latest entry is {latest and latest.group(1)}, not {v}"
    assert latest.group(2) == CFF["date-released"], "CITATION.cff's date-released is the latest changelog date"
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in meta["project"]["dynamic"] and "version" not in meta["project"], "setuptools reads it"
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "connlap_lite.__version__"}


def test_the_book_shows_the_version():
    import sys
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        import connlap_version
    finally:
        sys.path.pop(0)
    assert connlap_version.read_version() == connlap_lite.__version__
    # (only a build renders the preface; its source must ask for the substitution that the extension fills)
    assert "{{ version }}" in (ROOT / "book" / "intro.md").read_text()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["connlap_version"] == "book/_ext"
    assert set(config["sphinx"]["local_extensions"].values()) == {"book/_ext"}     # the book's own extensions


def test_the_package_table_lists_every_public_module():
    """connlap_lite's opening docstring names every public module (not those starting with _, not __main__)."""
    import pkgutil
    public = {m.name for m in pkgutil.iter_modules(connlap_lite.__path__) if not m.name.startswith("_")}
    listed = set(re.findall(r"^``(\w+)``", connlap_lite.__doc__, re.M))
    assert public == listed, f"missing from the table: {sorted(public - listed)}; listed but absent: {sorted(listed - public)}"


def test_changes_after_a_release_sit_under_unreleased():
    """A dated change later than its release's date belongs under ``## Unreleased``, not in the release."""
    release = None
    for line in (ROOT / "CHANGELOG.md").read_text().splitlines():
        if line.startswith("## "):
            m = re.match(r"## (\S+) \((\d{4}-\d\d-\d\d)\)", line)
            assert m or line == "## Unreleased", f"a release heading is '## X.Y.Z (date)' or '## Unreleased': {line!r}"
            release = m and m.group(2)
        for date in re.findall(r"^###.*\((\d{4}-\d\d-\d\d)\)", line):
            assert release is None or date <= release, f"{line!r} is dated after its release ({release}): move it under ## Unreleased"


def _bib_entry(key: str) -> str:
    bib = (ROOT / "book" / "references.bib").read_text()
    entry = re.search(r"@\w+\{" + key + r",\n(.*?)\n\}", bib, re.S)
    assert entry, f"book/references.bib has no entry {key}"
    return entry.group(1)


def test_the_seed_paper_is_cited_with_its_authors_and_arxiv_id():
    # the seed paper is arXiv:2607.10677 (12 July 2026), by Lin, Chen, Li and others, never "Anonymous"
    entry = _bib_entry("seed2025connection")
    fields = dict(re.findall(r"^\s*(\w+)\s*=\s*\{?(.*?)\}?,?\s*$", entry, re.M))
    assert "anonymous" not in entry.lower(), "the seed paper's bibliography entry says Anonymous"
    assert fields["author"].startswith("Lin, Binbin and Chen, Wei and Li, Yalun")
    assert fields["year"] == "2026" and "2607.10677" in entry
    cited = [r for r in CFF.get("references", []) if "2607.10677" in str(r)]
    assert len(cited) == 1, "CITATION.cff's references: lists the seed paper arXiv:2607.10677 once"
    names = [a.get("family-names", a.get("name", "")) for a in cited[0]["authors"]]
    assert names[:3] == ["Lin", "Chen", "Li"] and not any("anonymous" in n.lower() for n in names)
    assert cited[0]["year"] == 2026 and cited[0]["title"] in entry.replace("{L}", "L")
