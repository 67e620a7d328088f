"""Sphinx extension: one citation style, author and year, in the text and in the bibliography.

The text cites by author and year (``bibtex_reference_style: author_year``: "[Ainslie et al., 2023]"); pybtex's
bibliography styles label entries otherwise ("[ALTdJ+23]"). This registers the bibliography style
``authoryear`` (``bibtex_default_style`` in _config.yml): pybtex's plain style, sorted by author, year and
title, with each entry labelled as the text cites it.
"""
from __future__ import annotations

from collections import Counter


def _surname(person) -> str:
    from pybtex.richtext import Text

    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


def author_year(entry) -> str:
    """An entry's label as the text cites it: one surname, two joined by "and", or the first and "et al.",
    then the year.

    >>> from pybtex.database import Entry, Person
    >>> author_year(Entry("article", {"year": "2023"}, persons={"author": [Person("Ainslie, Joshua"),
    ...     Person("Lee-Thorp, James"), Person("de Jong, Michiel")]}))
    'Ainslie et al., 2023'
    >>> author_year(Entry("misc", {"year": "2019", "key": "Hugging Face"}))
    'Hugging Face, 2019'
    """
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    if len(persons) > 2:
        who = f"{_surname(persons[0])} et al."
    elif persons:
        who = " and ".join(_surname(p) for p in persons)
    else:
        who = entry.fields.get("key") or entry.fields.get("organization") or entry.fields.get("publisher") or "Anon."
    year = entry.fields.get("year")
    return f"{who}, {year}" if year else who


def _styles():
    from pybtex.style.formatting.plain import Style as Plain
    from pybtex.style.labels import BaseLabelStyle

    class Labels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            labels = [author_year(e) for e in sorted_entries]
            count, seen = Counter(labels), Counter()
            for label in labels:                # two papers of one author in one year: 2023a, 2023b
                if count[label] > 1:
                    seen[label] += 1
                    label += chr(ord("a") + seen[label] - 1)
                yield label

    class AuthorYear(Plain):
        default_label_style = Labels
        default_sorting_style = "author_year_title"

    return AuthorYear


def setup(app):
    from pybtex.plugin import register_plugin

    register_plugin("pybtex.style.formatting", "authoryear", _styles(), force=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
