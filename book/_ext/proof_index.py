"""Sphinx extension: the proof index by number and title ("Theorem 3.1 (The layer is one walk)"), chapter by
chapter, instead of sphinx-proof's list of labels (``thm-t2-mha``) under their own first letters.

sphinx-proof keeps every theorem-like box in ``env.proof_list`` (its page, type and counter) but not its title;
this keeps the titles (``env.proof_titles``, filled as each page is read) and replaces the proof domain's index,
whose entries it numbers from Sphinx's figure numbers (``numfig``: theorems, definitions, propositions, lemmas
and corollaries on one counter per chapter, as the boxes themselves show).
"""
from __future__ import annotations

import re
from collections import defaultdict


def _keep_titles(app, doctree) -> None:
    titles = app.env.__dict__.setdefault("proof_titles", {})
    for node in doctree.findall(lambda n: hasattr(n, "get") and n.get("realtype") and n.get("label")):
        titles[node["label"]] = re.sub(r"^\s*\((.*)\)\s*$", r"\1", node.get("title", "")).strip()


def _purge(app, env, docname) -> None:
    titles, proofs = getattr(env, "proof_titles", {}), getattr(env, "proof_list", {})
    for label in [k for k in titles if proofs.get(k, {}).get("docname") == docname]:
        del titles[label]


def _merge(app, env, docnames, other) -> None:
    env.__dict__.setdefault("proof_titles", {}).update(getattr(other, "proof_titles", {}))


def numbered(realtype: str, number: tuple | None, title: str) -> str:
    r"""An index entry's name.

    >>> numbered("theorem", (3, 1), "The layer is one walk"), numbered("proof", None, "")
    ('Theorem 3.1 (The layer is one walk)', 'Proof')
    >>> numbered("proposition", (1, 6), r"A frame change conjugates $W$, $\mathrm{W}_1$")
    'Proposition 1.6 (A frame change conjugates W, W_1)'
    """
    # the index prints plain text: a title's formulas by their letters ($W$ as W, \mathrm{W} as W)
    title = re.sub(r"\\[a-zA-Z]+\s*", "", title.replace("$", "")).replace("{", "").replace("}", "")
    name = realtype.capitalize() + (" " + ".".join(map(str, number)) if number else "")
    return f"{name} ({title})" if title else name


def _index_class():
    from sphinx_proof.domain import ProofIndex

    class NumberedProofIndex(ProofIndex):
        def generate(self, docnames=None):
            env = self.domain.env
            proofs, titles = getattr(env, "proof_list", {}), getattr(env, "proof_titles", {})
            groups = defaultdict(list)
            for label, v in proofs.items():
                if v["realtype"] == "proof" or (docnames and v["docname"] not in docnames):
                    continue
                figures = env.toc_fignumbers.get(v["docname"], {})
                number = (figures.get(v["countertype"], {}).get(v["ids"][0])
                          or figures.get(v["realtype"], {}).get(v["ids"][0]))
                chapter = env.titles.get(v["docname"])
                head = (f"{number[0]}  " if number else "") + (chapter.astext() if chapter else v["docname"])
                groups[(number[0] if number else 999, head)].append(
                    (number or (999,), [numbered(v["realtype"], number, titles.get(label, "")), 0, v["docname"],
                                        v["ids"][0], "", "", ""]))
            content = [(head, [entry for _, entry in sorted(entries, key=lambda e: e[0])])
                       for (_, head), entries in sorted(groups.items())]
            return content, True

    return NumberedProofIndex


def setup(app):
    from sphinx_proof.domain import ProofDomain

    ProofDomain.indices = [_index_class()]
    app.connect("doctree-read", _keep_titles)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
