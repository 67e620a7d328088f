"""Build the three corpora that ship with connlap_lite (``connlap_lite/models/corpora/``), once, from their sources.

    python tools/corpora.py PYTHON_STDLIB_DIR JANEAUSTENR_DIR

``PYTHON_STDLIB_DIR`` is the standard library of CPython 3.11.7 (``.../lib/python3.11``); ``JANEAUSTENR_DIR``
is the R package janeaustenr 1.0.0 as Debian's ``r-cran-janeaustenr`` 1.0.0-1 installs it
(``apt-get download r-cran-janeaustenr && dpkg-deb -x r-cran-janeaustenr_*.deb x``, then
``x/usr/lib/R/site-library/janeaustenr``). It writes ``pydoc.json.xz``, ``stdlib.json.xz`` and
``narrative.json.xz`` (each ``{"texts": [[title, text], ...]}``) and records every corpus's digest in
``corpora.json``, which states each one's source, release and licence; connlap_lite.models.text checks the digest
when it reads a corpus. Run again on the same sources it writes the same texts (the same digests).

* ``pydoc``: every topic of ``pydoc_data/topics.py``, in sorted order, one text per topic;
* ``stdlib``: every third top-level ``*.py`` file of the standard library in sorted order, one text per file;
* ``narrative``: Jane Austen's six completed novels, one text per novel, as janeaustenr holds them (Project
  Gutenberg's transcriptions without Project Gutenberg's header and licence), less the modern editor's
  "A NOTE ON THE TEXT" that ends its *Northanger Abbey*.

The R data is read by a small reader of R's serialisation format (XDR, version 2 or 3), enough for the
character vectors janeaustenr holds.
"""
import ast
import gzip
import hashlib
import json
import lzma
import struct
import sys
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "connlap_lite" / "models" / "corpora"
NOVELS = {"emma": "Emma", "mansfieldpark": "Mansfield Park", "northangerabbey": "Northanger Abbey",
          "persuasion": "Persuasion", "prideprejudice": "Pride and Prejudice",
          "sensesensibility": "Sense and Sensibility"}


class RData:
    """R's XDR serialisation, read as far as lists, vectors and strings go."""

    def __init__(self, data: bytes):
        self.b, self.i, self.refs = data, 0, []

    def int(self) -> int:
        (v,) = struct.unpack(">i", self.b[self.i:self.i + 4])
        self.i += 4
        return v

    def read(self):
        if self.b[:2] != b"X\n":
            raise ValueError("not R's XDR serialisation")
        self.i = 2
        version = self.int()
        self.int(), self.int()
        if version == 3:
            n = self.int()
            self.i += n                               # the native encoding's name
        return self.obj()

    def obj(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind in (254, 242):                        # NULL, the empty environment
            return None
        if kind == 255:                               # a reference to an earlier symbol
            return self.refs[(flags >> 8) - 1]
        if kind == 1:                                 # a symbol
            sym = ("symbol", self.obj())
            self.refs.append(sym)
            return sym
        if kind == 2:                                 # a pairlist
            attr = self.obj() if has_attr else None
            tag = self.obj() if has_tag else None
            head, rest = (tag, self.obj()), self.obj()
            del attr
            return [head] + (rest if isinstance(rest, list) else [])
        if kind == 9:                                 # a string
            n = self.int()
            if n == -1:
                return None
            s = self.b[self.i:self.i + n].decode("utf-8")
            self.i += n
            return s
        n = self.int()
        if kind in (10, 13):
            v = list(struct.unpack(f">{n}i", self.b[self.i:self.i + 4 * n]))
            self.i += 4 * n
        elif kind == 14:
            v = list(struct.unpack(f">{n}d", self.b[self.i:self.i + 8 * n]))
            self.i += 8 * n
        elif kind in (16, 19, 20):
            v = [self.obj() for _ in range(n)]
        else:
            raise ValueError(f"R type {kind} is not read here")
        attrs = self.obj() if has_attr else None
        return (v, attrs) if has_attr else v


def lazy_load(base: Path) -> dict:
    """The objects of an R lazy-load database (``base.rdx`` and ``base.rdb``), by name."""
    index, attrs = RData(gzip.decompress(base.with_suffix(".rdx").read_bytes())).read()
    names = dict(attrs)[("symbol", "names")]
    variables, vattrs = index[names.index("variables")]
    keys = dict(vattrs)[("symbol", "names")]
    rdb = base.with_suffix(".rdb").read_bytes()
    out = {}
    for key, (offset, length) in zip(keys, variables):
        out[key] = RData(zlib.decompress(rdb[offset + 4:offset + length])).read()
    return out


def pydoc_texts(stdlib: Path) -> list[list[str]]:
    source = (stdlib / "pydoc_data" / "topics.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    topics = ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.Assign)))
    return [[k, topics[k]] for k in sorted(topics)]


def stdlib_texts(stdlib: Path) -> list[list[str]]:
    files = sorted(f for f in stdlib.glob("*.py") if f.is_file())[::3]
    texts = [[f.name, f.read_text(encoding="utf-8")] for f in files]
    return [t for t in texts if t[1].strip()]


def narrative_texts(janeaustenr: Path) -> list[list[str]]:
    data = lazy_load(janeaustenr / "data" / "Rdata")
    texts = []
    for key, title in NOVELS.items():
        lines = [l if l is not None else "" for l in data[key]]
        if "A NOTE ON THE TEXT" in lines:             # the modern editor's note, not Austen's
            lines = lines[:lines.index("A NOTE ON THE TEXT")]
        text = "\n".join(lines).strip() + "\n"
        if "gutenberg" in text.lower():
            raise ValueError(f"{title}: Project Gutenberg's boilerplate is still there")
        texts.append([title, text])
    return texts


def digest(texts: list[list[str]]) -> str:
    """connlap_lite.models.text.corpus_digest's sha256 of the titles and texts."""
    h = hashlib.sha256()
    for title, t in texts:
        h.update(title.encode("utf-8") + b"\0" + t.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def main(stdlib: Path, janeaustenr: Path) -> None:
    meta_path = OUT / "corpora.json"
    meta = json.loads(meta_path.read_text())
    for name, texts in (("pydoc", pydoc_texts(stdlib)), ("stdlib", stdlib_texts(stdlib)),
                        ("narrative", narrative_texts(janeaustenr))):
        raw = json.dumps({"texts": texts}, ensure_ascii=False).encode("utf-8")
        (OUT / f"{name}.json.xz").write_bytes(lzma.compress(raw, preset=9))
        meta[name]["texts"] = len(texts)
        meta[name]["characters"] = sum(len(t) for _, t in texts)
        meta[name]["digest"] = digest(texts)
        print(f"{name}: {len(texts)} texts, {meta[name]['characters']} characters, digest {meta[name]['digest']}")
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tools/corpora.py PYTHON_STDLIB_DIR JANEAUSTENR_DIR")
    main(Path(sys.argv[1]), Path(sys.argv[2]))
