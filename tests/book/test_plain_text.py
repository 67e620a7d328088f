"""Nothing technical in the polished parts (issue 33): the strict build's check of captions and glued texts
(book/_ext/plain_captions.py), glued Markdown read as MyST so that its formulas are typeset, one citation style
(book/_ext/author_year.py), the proof index by number and title (book/_ext/proof_index.py), the scorecard
table in whole words, and the PDF's title page and list of figures (tools/book_pdf.py)."""
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import author_year  # noqa: E402
import plain_captions  # noqa: E402
import proof_index  # noqa: E402

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def test_the_strict_build_runs_the_checks_and_reads_glued_markdown_as_myst():
    sphinx = CONFIG["sphinx"]
    assert {"plain_captions", "author_year", "proof_index"} <= set(sphinx["local_extensions"])
    assert sphinx["config"]["nb_render_markdown_format"] == "myst"       # a glued $...$ is typeset, not printed
    assert sphinx["config"]["bibtex_reference_style"] == "author_year"
    assert sphinx["config"]["bibtex_default_style"] == "authoryear"


@pytest.mark.parametrize("text, shown", [
    ("dotted: `COLLAPSE` times the embeddings' residual", ["COLLAPSE"]),
    ("below MIN_SEEDS seeds", ["MIN_SEEDS"]),
    ("the uniform walk's share $u_n$", ["$"]),
    ("E1 holds for GPT-2 and BERT-base (TV distance, 95% interval)", []),
    ("the 0.1 times the embeddings' residual", []),
])
def test_technical_finds_dollars_and_the_packages_constant_names(text, shown):
    assert plain_captions.technical(text, plain_captions.constants()) == shown


def test_the_constants_are_the_packages_own():
    names = plain_captions.constants()
    assert {"COLLAPSE", "MIN_PASSAGES", "PROPOSITION_TOL"} <= names and "E1" not in names


def test_the_check_warns_on_a_caption_and_on_a_printed_dollar(tmp_path):
    """The check on a small resolved document: a caption with a constant's name and a text with a raw `$` warn;
    a formula and code do not."""
    from docutils import nodes
    from docutils.utils import new_document
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    doc = new_document("x", get_default_settings(Parser))
    figure = nodes.figure("", nodes.caption("", "", nodes.Text("dotted: "), nodes.literal("", "COLLAPSE"),
                                            nodes.Text(" times")))
    glued = nodes.inline("", "", nodes.Text("the uniform walk's share $u_n$"), classes=["glued"])
    doc += [figure, nodes.paragraph("", "", glued, nodes.math("", "x^2")),
            nodes.paragraph("", "", nodes.math("", "$"), nodes.literal("", "$HOME"), nodes.Text("costs $5"))]
    warnings = []

    class Log:
        def warning(self, message, **kw):
            warnings.append(message)

    app = type("App", (), {"outdir": str(tmp_path / "html")})()
    from sphinx.util import logging
    getter = logging.getLogger
    logging.getLogger = lambda name: Log()
    try:
        plain_captions.check(app, doc, "page")
    finally:
        logging.getLogger = getter
    assert len(warnings) == 2
    assert warnings[0].startswith("a caption or glued text (unrendered dollar mathematics?) shows $")
    assert warnings[1].startswith("a caption shows COLLAPSE")


def test_the_bibliography_labels_entries_as_the_text_cites_them():
    from pybtex.database import parse_file

    bib = parse_file(str(ROOT / "book" / "references.bib"))
    labels = {key: author_year.author_year(entry) for key, entry in bib.entries.items()}
    assert all(", " in label and label[-4:].isdigit() for label in labels.values()), labels
    style = author_year._styles()()
    formatted = list(style.format_entries(bib.entries.values()))
    assert all(not any(c.isupper() and c2.isupper() for c, c2 in zip(e.label, e.label[1:3])) or " " in e.label
               for e in formatted)                                     # no "ALTdJ+23"


def test_the_proof_index_names_numbered_titles():
    assert proof_index.numbered("theorem", (3, 1), "The layer is one walk") == "Theorem 3.1 (The layer is one walk)"
    assert proof_index.numbered("definition", (4, 2), "") == "Definition 4.2"


def test_the_scorecard_table_has_five_columns_of_whole_words():
    from connlap_lite.pages.findings.scorecard import Table

    t = Table(["claim", "models", "trained vs the strongest null", "verdict", "chapter"],
              [[("E1, encoder", "tv_norm_nosink"), "minilm-l6", "x; " * 40, ("holds", "kept in 95% of resamples"),
                "E1"]])
    page = t._repr_html_()
    assert page.count("<th ") == 5 and "word-break:normal" in page and "overflow-wrap:normal" in page
    assert "holds<br>kept in 95% of resamples" in page
    assert "| E1, encoder<br>tv_norm_nosink |" in t._repr_markdown_()


def test_the_pdfs_title_page_has_edition_authors_date_and_address():
    import book_pdf

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    facts = book_pdf.edition()
    assert facts["edition"] == f"Version {cff['version']}" and facts["url"] == cff["url"]
    assert facts["authors"] == ", ".join(a["name"] for a in cff["authors"])
    assert str(cff["date-released"])[:4] in facts["date"]
    page = book_pdf.title_page(facts)
    for value in facts.values():
        assert value in page
