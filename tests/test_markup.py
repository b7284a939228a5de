"""Text from data or configuration written into Markdown: a table's cells, its column names and its note stay text when
the file is read as CommonMark (with GitHub's tables), whatever markup they carry. Hand-made: what a hostile folder
name or dataset title would hold."""

from __future__ import annotations

import html
import re

import polars as pl
from markdown_it import MarkdownIt

from quicack.figures.common import save
from quicack.markup import md_paragraph, md_text, md_text_expr
from quicack.provenance import DatasetDescription
from quicack.rendered import Rendered

HOSTILE = [
    '<img src=x onerror="alert(1)">',
    "<script>alert(1)</script>",
    "[link](javascript:alert(1)) ![image](http://tracker.invalid/x.png)",
    "<http://autolink.invalid> &lt;entity&gt; &amp;",
    "*emphasis* _under_ `code` ~~struck~~ $x^2$",
    "a | b \\| c",
    "line one\nline two\r\n\tthree",
]
# Each starts a paragraph as a block: a heading, a quote, a list, a rule, an ordered list.
BLOCK_STARTS = ["# heading", "> quote", "- item", "+ item", "---", "=== underline", "12. item", "3) item"]


# Any element but those of a table and a paragraph.
ELEMENTS = re.compile(r"<(?!/?(table|thead|tbody|tr|th|td|p)[ >])")


def _render(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def _text(rendered: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", rendered)).split())


def test_hostile_text_is_text_in_a_markdown_cell_and_paragraph():
    for text in HOSTILE + BLOCK_STARTS:
        table = _render(f"| a | b |\n|---|---|\n| {md_text(text)} | x |\n")
        assert table.count("<td>") == 2, (text, table)  # one row of two cells: no '|' of the text ends a cell
        paragraph = _render(md_paragraph(text) + "\n")
        for rendered in (table, paragraph):
            assert not ELEMENTS.search(rendered), (text, rendered)
            assert " ".join(text.split()) in _text(rendered), (text, rendered)
    # The polars expression escapes as md_text does.
    frame = pl.DataFrame({"t": HOSTILE + BLOCK_STARTS}).select(md_text_expr(pl.col("t")))
    assert frame["t"].to_list() == [md_text(t) for t in HOSTILE + BLOCK_STARTS]


def test_a_saved_tables_markdown_keeps_folder_names_and_the_title_as_text(tmp_path):
    description = DatasetDescription("d", "other", "# Title <img src=x onerror=alert(1)> [x](javascript:alert(1))")
    table = pl.DataFrame({"run_id": HOSTILE, "<b>column</b>": range(len(HOSTILE))})
    save(Rendered(table, runs=None), tmp_path, "t-tab", "", description)
    rendered = _render((tmp_path / "t-tab.md").read_text(encoding="utf-8"))
    assert not ELEMENTS.search(rendered), rendered
    shown = _text(rendered)
    assert all(" ".join(text.split()) in shown for text in HOSTILE)
    assert "<b>column</b>" in shown and description.footnote() in shown
